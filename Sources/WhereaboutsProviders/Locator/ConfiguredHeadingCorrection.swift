import WhereaboutsCore
import WhereaboutsStorage

extension HeadingCorrection {
    /// The correction `[compass]` asks for: by the World Magnetic Model of the `WMM.COF` file `magnetic-model=`
    /// names, read once, or by the built-in WMM2025 without one. A missing or bad file is one log line and no
    /// true heading.
    public init(configuration: CompassConfig, logger: any Logger) {
        guard let path = configuration.magneticModelPath else {
            self.init(model: .wmm2025())
            return
        }
        self.init(model: Self.readModel(path, logger: logger))
    }

    /// The World Magnetic Model from the `WMM.COF` at `path`, or nil (and one log line) when it cannot be read.
    private static func readModel(_ path: String, logger: any Logger) -> MagneticModel? {
        let bytes: [UInt8]
        do {
            guard let read = try RegularFile.read(path, limit: 1 << 20, followLinks: true) else {
                logger.error("compass: no magnetic model at \(path); headings will have no true heading")
                return nil
            }
            bytes = read
        } catch {
            logger.error("compass: cannot read the magnetic model: \(error); headings will have no true heading")
            return nil
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            logger.error("compass: \(path) is not text; headings will have no true heading")
            return nil
        }
        do {
            let model = try MagneticModel.parse(cofText: text, file: path)
            logger.info(
                "compass: magnetic model \(model.name) from \(path), valid \(model.validity.lowerBound) up to "
                    + "\(model.validity.upperBound)")
            return model
        } catch {
            logger.error("compass: \(error); headings will have no true heading")
            return nil
        }
    }
}
