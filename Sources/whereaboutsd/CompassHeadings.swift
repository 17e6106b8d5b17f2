import Compass
import DBus
import Loop
import WhereaboutsCore
import WhereaboutsStorage

/// The compass's headings on the fixes the providers deliver (`[compass] enable=true`): each fix gets the
/// heading iio-sensor-proxy's compass has now, turned to true north by the World Magnetic Model
/// (``HeadingCorrection``), and each change of heading offers the latest fix again with the new one, which the
/// clients get as an in-place refresh of their Location (the same measurement, so never a second
/// `LocationUpdated`), as GeoClue 2.6 notifies its location again when the compass turns.
///
/// The model is the built-in WMM2025 unless `magnetic-model=` names a file, read once at start; a missing or bad
/// file is one log line and no true heading. A fix whose date (or height) the model does not cover gets no true
/// heading, with one log line each time that starts.
@BusActor
final class CompassHeadings {
    /// The provider to add to the provider set.
    let compass: SensorProxyCompass
    private let correction: HeadingCorrection
    private let logger: any Logger
    /// The latest fix the providers delivered, without headings.
    private var latest: Fix?
    /// True while fixes get no true heading for a reason the log has been told.
    private var toldProblem = false
    /// Called with each fix, headed, for the service.
    var onFix: (@BusActor (Fix) -> Void)?

    /// The compass on `connection`, with the model from `configuration`'s file, or the built-in one.
    init(_ configuration: CompassConfig, connection: Connection, clock: any WhereaboutsCore.Clock, logger: any Logger) {
        self.logger = logger
        let model: MagneticModel? =
            if let path = configuration.magneticModelPath { Self.loadModel(path, logger: logger) } else { .wmm2025() }
        correction = HeadingCorrection(model: model)
        compass = SensorProxyCompass(connection: connection, clock: clock, logger: logger)
        compass.onHeading = { [weak self] heading in
            guard let self, heading != nil, let latest = self.latest else { return }
            self.onFix?(self.headed(latest))
        }
        compass.watch()
    }

    /// Takes a fix from the providers and passes it on with the compass's headings.
    func deliver(_ fix: Fix) {
        latest = fix
        onFix?(headed(fix))
    }

    private func headed(_ fix: Fix) -> Fix {
        let (headed, problem) = correction.applying(magnetic: compass.heading, to: fix)
        if let problem {
            if !toldProblem { logger.warning("compass: no true heading: \(problem)") }
            toldProblem = true
        } else if headed.trueHeading != nil {
            toldProblem = false
        }
        return headed
    }

    /// The World Magnetic Model from the `WMM.COF` at `path`, or nil (and one log line) when it cannot be read.
    private static func loadModel(_ path: String, logger: any Logger) -> MagneticModel? {
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
