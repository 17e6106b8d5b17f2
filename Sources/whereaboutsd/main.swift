// whereaboutsd: parse the command line, then hand over to the daemon on the bus thread.
import Glibc

let options = Options.parseOrExit(Array(CommandLine.arguments.dropFirst()))
Daemon.launch(options)
while true { pause() }
