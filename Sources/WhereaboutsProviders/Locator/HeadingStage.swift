import Loop
import WhereaboutsCore

/// The compass's headings on the fused fixes: each fix gets the heading the compass has now, turned to true north
/// (``HeadingCorrection``), and each change of heading offers the latest fix again with the new one, which the
/// clients get as an in-place refresh of their Location (the same measurement, so never a second
/// `LocationUpdated`), as GeoClue 2.6 notifies its location again when the compass turns.
///
/// A fix whose date (or height) the model does not cover gets no true heading, with one log line each time that
/// starts.
@BusActor
final class HeadingStage {
    private let compass: any CompassSource
    private let correction: HeadingCorrection
    private let logger: any Logger
    /// The latest fix taken, without headings.
    private var latest: Fix?
    /// True while fixes get no true heading for a reason the log has been told.
    private var toldProblem = false
    /// Called with each fix, headed.
    var onFix: (@BusActor (Fix) -> Void)?

    /// Headings from `compass`, corrected by `correction`.
    init(compass: any CompassSource, correction: HeadingCorrection, logger: any Logger) {
        self.compass = compass
        self.correction = correction
        self.logger = logger
        compass.onHeading = { [weak self] heading in
            guard let self, heading != nil, let latest = self.latest else { return }
            self.onFix?(self.headed(latest))
        }
    }

    /// Takes a fused fix and passes it on with the compass's headings.
    func take(_ fix: Fix) {
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
}
