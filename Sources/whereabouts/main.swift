// whereabouts: the command-line client. Parsing and printing here; the work is in the Whereabouts library.
import Glibc
import Loop
import Whereabouts

let command = Command.parseOrExit(Array(CommandLine.arguments.dropFirst()))
EventLoop.main.execute { command.run() }
while true { pause() }
