// whereaboutsd: parse the command line, then hand over to the daemon on the bus thread; the main thread is left
// to hand memory back once clients went away (IdleMemory).

let options = Options.parseOrExit(Array(CommandLine.arguments.dropFirst()))
Daemon.launch(options)
IdleMemory.serveReleases(logger: JournalLogger())
