import Glibc

/// What `wbnet` is asked to run: `--trials N` (20) fixes of each kind, and for the stationary comparison
/// `--scans N` (360, an hour of scans at 10 s) scripted scans `--scan-seconds S` (2) apart, from `--seed N` (1).
struct BenchOptions {
    var trials = 20
    var scans = 360
    var scanSeconds = 2.0
    var seed: UInt64 = 1
    /// `--filters`: measure what the access point filters cost per scan (``ScanFilters``) instead.
    var filters = false
    /// `--scan-cpu`: measure each service's CPU per scan, as installed (``ScanCPU``) instead.
    var scanCPU = false

    /// The options in `arguments`; prints the usage and exits 2 on anything else.
    static func parse(_ arguments: [String]) -> BenchOptions {
        var options = BenchOptions()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            if flag == "--filters" || flag == "--scan-cpu" {
                if flag == "--filters" { options.filters = true } else { options.scanCPU = true }
                continue
            }
            let text = rest.popFirst() ?? ""
            switch flag {
            case "--trials" where Int(text).map({ $0 > 0 }) == true: options.trials = Int(text)!
            case "--scans" where Int(text).map({ $0 > 1 }) == true: options.scans = Int(text)!
            case "--scan-seconds" where Double(text).map({ $0 >= 1.5 }) == true: options.scanSeconds = Double(text)!
            case "--seed" where UInt64(text) != nil: options.seed = UInt64(text)!
            default: usage()
            }
        }
        return options
    }

    private static func usage() -> Never {
        print(
            "usage: wbnet [--filters | --scan-cpu] [--trials N (20)] [--scans N (360)] [--scan-seconds S (2, at least 1.5)] "
                + "[--seed N (1)]")
        exit(2)
    }
}
