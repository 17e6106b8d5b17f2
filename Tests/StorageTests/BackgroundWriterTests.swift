import Foundation
import Synchronization
import Testing
import WhereaboutsStorage

@Suite("The writer thread of the state files")
struct BackgroundWriterTests {
    /// What a writer under test did, in order.
    final class Record: Sendable {
        let written = Mutex<[Int]>([])
        let finished = Mutex<[(ticket: UInt64, failure: String?)]>([])
        /// Held by the test while it wants the first write to stay in flight.
        let gate = DispatchSemaphore(value: 0)
        let firstWriteStarted = DispatchSemaphore(value: 0)
    }

    /// A write that failed.
    struct DiskFull: Error, CustomStringConvertible {
        let value: Int
        var description: String { "disk full for \(value)" }
    }

    static func writer(_ record: Record, failing: Set<Int> = []) -> BackgroundWriter<Int> {
        BackgroundWriter(
            write: { value in
                let first = record.written.withLock { written in
                    written.append(value)
                    return written.count == 1
                }
                if first {
                    record.firstWriteStarted.signal()
                    record.gate.wait()
                }
                if failing.contains(value) { throw DiskFull(value: value) }
            },
            finished: { ticket, failure in record.finished.withLock { $0.append((ticket, failure)) } })
    }

    @Test func whatIsHandedOverDuringAWriteIsCoalescedIntoTheNextAndFlushWaitsForIt() {
        let record = Record()
        let writer = Self.writer(record)
        #expect(writer.submit(1) == 1)
        record.firstWriteStarted.wait()
        // While 1 is being written, 2, 3 and 4 come in: only the latest is written next.
        #expect(writer.submit(2) == 2)
        #expect(writer.submit(3) == 3)
        #expect(writer.submit(4) == 4)
        record.gate.signal()
        #expect(writer.flush(timeout: .seconds(30)))
        #expect(record.written.withLock { $0 } == [1, 4])
        let finished = record.finished.withLock { $0 }
        #expect(finished.map(\.ticket) == [1, 4] && finished.allSatisfy { $0.failure == nil })
        // The thread ended with nothing pending; the next submission starts another.
        #expect(writer.submit(5) == 5)
        #expect(writer.flush(timeout: .seconds(30)))
        #expect(record.written.withLock { $0 } == [1, 4, 5])
    }

    @Test func aFailedWriteIsReportedWithTheTicketItCarried() {
        let record = Record()
        record.gate.signal()
        let writer = Self.writer(record, failing: [1])
        writer.submit(1)
        #expect(writer.flush(timeout: .seconds(30)))
        writer.submit(2)
        #expect(writer.flush(timeout: .seconds(30)))
        let finished = record.finished.withLock { $0 }
        #expect(finished.count == 2)
        #expect(finished.first?.ticket == 1 && finished.first?.failure == "disk full for 1")
        #expect(finished.last?.ticket == 2 && finished.last?.failure == nil)
    }

    @Test func flushGivesUpAtItsBoundWhileAWriteHangs() {
        let record = Record()
        let writer = Self.writer(record)
        writer.submit(1)
        record.firstWriteStarted.wait()
        #expect(!writer.flush(timeout: .milliseconds(20)))
        record.gate.signal()
        #expect(writer.flush(timeout: .seconds(30)))
    }
}
