// whereaboutsd: parse the command line, then hand over to the daemon on the bus thread; the main thread is left
// to release the code pages while the daemon is idle.

let options = Options.parseOrExit(Array(CommandLine.arguments.dropFirst()))
Daemon.launch(options)
ExecutableCode.serveReleases(logger: JournalLogger())
