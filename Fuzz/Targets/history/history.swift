import FuzzSupport
import WhereaboutsCore

/// The time the inputs are read at: 2023-11-14T22:28:20Z, just after the seed files' entries ended.
private let now = WallTime(microseconds: 1_700_000_900_000_000)

/// A user's history file: parsed; an accepted file's entries are within the format's bounds, write a text that
/// reads back to the same entries, and what the book writes of them (whole, or appended after a torn line) reads
/// back too, within the size the reader accepts.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHistory(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    let content: HistoryFile.Content
    do {
        content = try HistoryFile.parse(text, now: now)
    } catch {
        precondition(error.line >= 1, "an error names no line: \(error)")
        _ = error.description
        return 0
    }
    precondition(content.entries.count <= content.lines && content.lines <= HistoryFile.maximumLines, "line count")
    for entry in content.entries { check(entry) }
    let written = HistoryFile.serialize(content.entries)
    let reread = readBack(written)
    precondition(reread.entries == content.entries && !reread.tornLine, "the entries' own text reads differently")

    var book = HistoryBook()
    let leftOut = book.adopt(content, ofUser: 1000, now: now)
    precondition(leftOut == max(0, content.entries.count - HistoryBook.limitPerUser), "\(leftOut) left out")
    book.record(
        .use(AppUse(app: "claimed:fuzz", started: now, stopped: now, level: .city, approximate: true, providers: [])),
        user: 1000, now: now)
    for write in book.takeWrites(now: now) {
        switch write {
        case .rewrite(_, let text): precondition(!readBack(text).entries.isEmpty, "a whole file of nothing")
        case .append(_, let lines): _ = readBack(text + lines)
        case .remove: preconditionFailure("a user with entries has the file removed")
        }
    }
    return 0
}

/// `text`, which the writer made, read back; it must be accepted and fit the reader's size limit.
private func readBack(_ text: String) -> HistoryFile.Content {
    precondition(text.utf8.count <= HistoryFile.fileSizeLimit, "the writer made a file larger than its reader takes")
    do {
        return try HistoryFile.parse(text, now: now)
    } catch {
        preconditionFailure("a written history is refused: \(error)\n\(text)")
    }
}

private func check(_ entry: HistoryEntry) {
    precondition(entry.time >= now.advanced(by: .zero - HistoryBook.maximumAge), "an expired entry was kept")
    switch entry {
    case .use(let use):
        precondition(
            use.stopped.map { $0 >= use.started } ?? false, "a use without its stop, or ending before it began")
        precondition(!use.app.isEmpty && use.app.utf8.count <= HistoryFile.maximumTextBytes, "app \(use.app)")
        precondition(use.level != .none, "a use at no level")
    case .lookup(let lookup):
        precondition(!lookup.host.isEmpty && lookup.host.utf8.count <= HistoryFile.maximumTextBytes, "host")
        precondition(lookup.apps.count <= HistoryFile.maximumLookupApps, "\(lookup.apps.count) apps")
        precondition(lookup.outcome.accuracy.map { $0.isFinite && $0 > 0 } ?? true, "accuracy")
    }
}

#if !FUZZING
    /// Built without libFuzzer, the target replays the inputs named on its command line (see Package.swift).
    @main
    enum Replay {
        static func main() { replayCommandLineInputs(through: fuzzHistory) }
    }
#endif
