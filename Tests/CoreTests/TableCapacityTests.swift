import Testing
import WhereaboutsCore

/// Tables that grew for a burst give their storage back as it ends (``Swift/Dictionary/releaseUnusedCapacity()``).
@Suite("Table capacity after a burst")
struct TableCapacityTests {
    @Test func aTableShrinksOnceMostlyEmptyAndKeepsWhatItHolds() {
        var table: [UInt32: String] = [:]
        for key in 0..<5000 as Range<UInt32> { table[key] = "peer \(key)" }
        let grown = table.capacity
        for key in 0..<4000 as Range<UInt32> {
            table[key] = nil
            table.releaseUnusedCapacity()
        }
        #expect(table.capacity == grown, "a fifth full is kept as it is")
        for key in 4000..<4990 as Range<UInt32> {
            table[key] = nil
            table.releaseUnusedCapacity()
        }
        #expect(table.count == 10 && table.capacity < 64, "capacity \(table.capacity) of \(grown)")
        #expect(table[4995] == "peer 4995")
        for key in 4990..<5000 as Range<UInt32> {
            table[key] = nil
            table.releaseUnusedCapacity()
        }
        #expect(table.capacity == 0)
    }

    @Test func aSmallTableIsLeftAlone() {
        var table: [String: Int] = ["a": 1, "b": 2, "c": 3]
        table["a"] = nil
        let capacity = table.capacity
        table.releaseUnusedCapacity()
        #expect(table.capacity == capacity && table == ["b": 2, "c": 3])
    }
}
