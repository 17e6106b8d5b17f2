import Loop
import WhereaboutsCore

/// One query for Wi-Fi and the cells where `[wifi]` and `[3g]` are both on: the lookup (``CellCarryingLookup``)
/// carries the cells (``CarriedCells``) with its access points, and its answer goes back to the cell side.
///
/// Both sides hold it and speak only to it: the cell side asks it to carry the cells (``carry(_:)``); the lookup
/// asks it which cells to carry (``cellsToCarry``), hands it the answer (``answered(_:carrying:)``) and says when a
/// promised lookup will not be sent (``declined()``). It keeps what concerns both, the count of the answers
/// carried. It lives as long as the sides hold it, and holds them weakly, as the providers are the provider set's.
@BusActor
public final class CombinedCellQueries {
    private weak var lookup: (any CellCarryingLookup)?
    private weak var cells: (any CarriedCells)?
    /// How many answers to lookups that carried the cells came back: `carried-by-wifi` in the cell provider's row
    /// of `io.github.whereabouts1.Manager.Providers`.
    public private(set) var answersCarried: UInt32 = 0

    private init(lookup: any CellCarryingLookup, cells: any CarriedCells) {
        self.lookup = lookup
        self.cells = cells
    }

    /// Joins `lookup` and `cells` in queries that each of them then holds.
    public static func join(lookup: any CellCarryingLookup, cells: any CarriedCells) {
        let queries = CombinedCellQueries(lookup: lookup, cells: cells)
        lookup.combinedQueries = queries
        cells.combinedQueries = queries
    }

    /// Asked by the cell side: whether the lookup sends `asked` with its access points, or will.
    public func carry(_ asked: [ServingCell]) -> Bool { lookup?.carryCells(asked) ?? false }

    /// Asked by the lookup: the cells to send with its access points now.
    public var cellsToCarry: [ServingCell] { cells?.cellsToCarry ?? [] }

    /// Told by the lookup: the answer to a query that carried `asked`.
    public func answered(_ result: Result<HTTPResponse, HTTPFailure>, carrying asked: [ServingCell]) {
        answersCarried &+= 1
        cells?.combinedQueryAnswered(result, for: asked)
    }

    /// Told by the lookup: the query it promised to carry the cells in will not be sent.
    public func declined() { cells?.wifiDeclined() }
}
