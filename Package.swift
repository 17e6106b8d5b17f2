// swift-tools-version:6.2
import PackageDescription

/// Every Swift target builds in Swift 6 language mode with warnings treated as errors.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "Whereabouts",
    products: [
        .library(name: "Whereabouts", targets: ["Whereabouts"]),
        .executable(name: "whereaboutsd", targets: ["whereaboutsd"]),
        .executable(name: "whereabouts", targets: ["whereabouts"]),
    ],
    targets: [
        // C interop: libdbus headers, nothing else.
        .systemLibrary(
            name: "CDBus", path: "Sources/CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // C interop: glibc's allocator controls (<malloc.h>), for the daemon's memory handed back after bursts.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        // C interop: the kernel's epoll interface (<sys/epoll.h>), for the event loop.
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        // C interop: libpolkit-gobject-1 and the GLib it links, loaded with dlopen at the first check.
        .target(
            name: "CPolkit", exclude: ["abi-check.c"],
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wconversion", "-Werror"])]),
        // The only module that touches libpolkit: checks on a GLib thread of their own.
        .target(name: "Polkit", dependencies: ["CPolkit", "WhereaboutsCore", "Loop"], swiftSettings: strict),
        // C interop: the part of libcurl the HTTP module calls, loaded with dlopen at the first request.
        .target(
            name: "CCurl",
            cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wconversion", "-Werror"])]),
        // The only module that touches libcurl: HTTP requests on a thread of their own.
        .target(name: "HTTP", dependencies: ["CCurl", "WhereaboutsCore"], swiftSettings: strict),
        // Wi-Fi scans through wpa_supplicant's or NetworkManager's D-Bus API.
        .target(
            name: "WiFi", dependencies: ["DBus", "Loop", "LoopScheduling", "WhereaboutsCore", "WhereaboutsProviders"],
            swiftSettings: strict),
        // The modems' location through ModemManager's D-Bus API.
        .target(
            name: "Modem", dependencies: ["DBus", "Loop", "WhereaboutsCore", "WhereaboutsProviders"],
            swiftSettings: strict),
        // An epoll(7) event loop that is also a Swift SerialExecutor; it knows nothing of the domain.
        .target(name: "Loop", dependencies: ["CEpoll"], swiftSettings: strict),
        // The event loop as the domain's TimerScheduler, and `scheduleOnBus` for `@BusActor` timer actions.
        .target(name: "LoopScheduling", dependencies: ["Loop", "WhereaboutsCore"], swiftSettings: strict),
        // The only module that imports libdbus.
        .target(name: "DBus", dependencies: ["CDBus", "Loop"], swiftSettings: strict),
        // C interop with libgps, loaded with dlopen at the first connection: a flat copy of gpsd's reports, so the
        // struct layout stays in C.
        .target(name: "CGPSD", cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Wconversion", "-Werror"])]),
        // The only Swift module that touches libgps: the gpsd client behind WhereaboutsProviders' GPSDClient.
        .target(
            name: "GPSD", dependencies: ["CGPSD", "WhereaboutsCore", "WhereaboutsProviders", "Loop"],
            swiftSettings: strict),
        // The domain: locations, accuracy levels, clients, thresholds, configuration. No C, no D-Bus, no I/O.
        .target(name: "WhereaboutsCore", swiftSettings: strict),
        // State on disk: files written atomically and durably, the grant store.
        .target(name: "WhereaboutsStorage", dependencies: ["WhereaboutsCore"], swiftSettings: strict),
        // Location sources that need no hardware: static file and replay of recorded tracks.
        .target(
            name: "WhereaboutsProviders",
            dependencies: ["WhereaboutsCore", "WhereaboutsStorage", "Loop", "LoopScheduling"],
            swiftSettings: strict),
        // The GeoClue2 objects on the bus, mapped onto the domain.
        .target(
            name: "GeoClueService",
            dependencies: ["WhereaboutsCore", "WhereaboutsStorage", "DBus", "Loop", "LoopScheduling"],
            swiftSettings: strict),
        // iio-sensor-proxy's compass, for the headings on fixes.
        .target(
            name: "Compass", dependencies: ["DBus", "Loop", "WhereaboutsCore", "WhereaboutsProviders"],
            swiftSettings: strict),
        // The client library for apps.
        .target(name: "Whereabouts", dependencies: ["DBus", "Loop", "WhereaboutsCore"], swiftSettings: strict),
        .executableTarget(
            name: "whereaboutsd",
            dependencies: [
                "WhereaboutsCore", "WhereaboutsProviders", "WhereaboutsStorage", "GPSD", "Polkit", "GeoClueService",
                "DBus", "Loop", "LoopScheduling", "HTTP", "WiFi", "Modem", "CMalloc", "Compass",
            ],
            swiftSettings: strict),
        .executableTarget(name: "whereabouts", dependencies: ["Whereabouts", "Loop"], swiftSettings: strict),
        // Harnesses shared by the test suites: a private bus, the daemon as a child process.
        // What every test tier shares, pure Swift: a seeded random generator, an event recorder, loggers.
        .target(name: "TestBasics", dependencies: ["WhereaboutsCore"], swiftSettings: strict),
        .target(
            name: "TestSupport", dependencies: ["DBus", "Loop", "TestBasics", "WhereaboutsCore"], swiftSettings: strict),
        .testTarget(name: "CoreTests", dependencies: ["WhereaboutsCore", "TestBasics"], swiftSettings: strict),
        .testTarget(name: "LoopTests", dependencies: ["Loop"], swiftSettings: strict),
        .testTarget(
            name: "StorageTests", dependencies: ["WhereaboutsStorage", "WhereaboutsCore"], swiftSettings: strict),
        .testTarget(
            name: "DBusTests", dependencies: ["DBus", "CDBus", "Loop", "TestBasics", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "ProvidersTests",
            dependencies: ["WhereaboutsProviders", "WhereaboutsCore", "Loop", "LoopScheduling", "TestBasics"],
            swiftSettings: strict),
        .testTarget(
            name: "GPSDTests",
            dependencies: [
                "GPSD", "CGPSD", "WhereaboutsCore", "WhereaboutsProviders", "Loop", "LoopScheduling", "TestBasics",
                "TestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "HTTPTests", dependencies: ["HTTP", "WhereaboutsCore", "TestBasics", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "WiFiTests",
            dependencies: [
                "WiFi", "WhereaboutsProviders", "WhereaboutsCore", "DBus", "Loop", "LoopScheduling", "TestBasics",
                "TestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "ServiceTests",
            dependencies: ["Whereabouts", "DBus", "Loop", "TestBasics", "TestSupport", "WhereaboutsCore"],
            swiftSettings: strict),
        // The service in the test's own process, on a private bus, its time and timers on a manual clock.
        .testTarget(
            name: "ServiceInProcessTests",
            dependencies: [
                "GeoClueService", "WhereaboutsCore", "WhereaboutsStorage", "CDBus", "DBus", "Loop", "TestBasics",
                "TestSupport",
            ],
            swiftSettings: strict),
    ]
)

// MARK: - Extras: benchmark programs and fuzz targets

/// What a developer does not need for the daemon, the CLI, the library or the tests: the benchmark programs
/// (Benchmarks/, `make bench`) and the fuzz targets (Fuzz/, `make fuzz`). They are declared only when the environment
/// holds `WHEREABOUTS_EXTRAS=1`, as the Makefile, scripts/bench.sh and scripts/test.sh set it, so that a plain
/// `swift build` builds the three products, the modules they link and the tests' shared harnesses, and nothing else.
let extras = Context.environment["WHEREABOUTS_EXTRAS"] == "1"

/// The programs behind the benchmark figures (Benchmarks/README.md), built in release by scripts/bench.sh.
let benchmarkTargets: [Target] = [
    // Figures for the gpsd and modem paths: .build/release/wbbench.
    .executableTarget(
        name: "wbbench", dependencies: ["DBus", "Loop", "TestBasics", "TestSupport"], path: "Benchmarks/wbbench",
        swiftSettings: strict),
    // whereaboutsd and GeoClue 2.6 side by side under load, attacks and regions: .build/release/wbload.
    .executableTarget(
        name: "wbload", dependencies: ["DBus", "Loop", "TestBasics", "TestSupport"], path: "Benchmarks/wbload",
        swiftSettings: strict),
    // Network positioning figures: .build/release/wbnet.
    .executableTarget(
        name: "wbnet", dependencies: ["DBus", "Loop", "TestBasics", "TestSupport", "HTTP", "WhereaboutsCore"],
        path: "Benchmarks/wbnet", swiftSettings: strict),
]

/// The libFuzzer targets, one per kind of untrusted input: Fuzz/Targets/NAME is the executable target fuzz-NAME,
/// depending on the modules it feeds, and on FuzzSupport (Fuzz/Support: the checks shared by the targets, and the
/// replay).
///
/// libFuzzer brings its own `main`, which calls the target's `LLVMFuzzerTestOneInput`, and it is linked only under
/// `-sanitize=fuzzer`. `make fuzz-build` builds each product on its own with `--sanitize=fuzzer` and
/// `-Xswiftc -DFUZZING`: under the FUZZING compilation condition a target defines `LLVMFuzzerTestOneInput` alone.
/// Without it (the extras in a debug or release build, as scripts/test.sh's) a target also has a small `@main` that
/// runs the files named on its command line through the same function, so that every build links, and an input a
/// fuzzer found can be replayed in a debug build.
let fuzzTargets: [(input: String, dependencies: [Target.Dependency])] = [
    ("nmea", ["WhereaboutsCore", "WhereaboutsProviders"]),
    ("gpsd", ["GPSD", "WhereaboutsCore", "WhereaboutsProviders"]),
    ("config", ["WhereaboutsCore"]),
    ("grants", ["WhereaboutsCore"]),
    ("static-location", ["WhereaboutsCore"]),
    ("gpx", ["WhereaboutsCore", "WhereaboutsProviders"]),
    ("dbus", ["DBus", "CDBus"]),
    ("ichnaea", ["WhereaboutsCore"]),
    ("position-cache", ["WhereaboutsCore"]),
    ("cell-cache", ["WhereaboutsCore"]),
    ("predicted-orbits", ["WhereaboutsCore"]),
    ("routes", ["WhereaboutsCore"]),
    ("regions", ["WhereaboutsCore"]),
    ("history", ["WhereaboutsCore"]),
    ("identity", ["WhereaboutsCore"]),
]
if extras {
    package.targets += benchmarkTargets
    package.targets.append(
        .target(name: "FuzzSupport", dependencies: ["WhereaboutsCore"], path: "Fuzz/Support", swiftSettings: strict))
    package.targets += fuzzTargets.map { input, dependencies in
        .executableTarget(
            name: "fuzz-\(input)", dependencies: ["FuzzSupport"] + dependencies, path: "Fuzz/Targets/\(input)",
            swiftSettings: strict)
    }
}

// MARK: - The pure tier

/// `WHEREABOUTS_PURE=1`: only what builds with the Swift toolchain alone (no C library's headers, no Debian package)
/// and the tests of it, for the fast loop as an ordinary user (HACKING.md): `WHEREABOUTS_PURE=1 swift test`.
let pureModules: Set<String> = [
    "WhereaboutsCore", "WhereaboutsStorage", "WhereaboutsProviders", "Loop", "CEpoll", "LoopScheduling", "TestBasics",
    "CoreTests", "StorageTests", "ProvidersTests", "LoopTests",
]
if Context.environment["WHEREABOUTS_PURE"] == "1" {
    package.products = []
    package.targets.removeAll { !pureModules.contains($0.name) }
}
