import Loop
import WhereaboutsCore

/// The side of a ``CombinedCellQueries`` that sends the lookup: Wi-Fi positioning, whose queries carry the serving
/// cells with the access points, as GeoClue's do.
@BusActor
public protocol CellCarryingLookup: AnyObject {
    /// The queries it is joined to; it asks them which cells to carry and tells them the answers.
    var combinedQueries: CombinedCellQueries? { get set }
    /// Sends `cells` with its access points; true when it did or will (``WiFiProvider/carryCells(_:)``).
    func carryCells(_ cells: [ServingCell]) -> Bool
}

/// The side of a ``CombinedCellQueries`` whose cells are carried: cell positioning.
@BusActor
public protocol CarriedCells: AnyObject {
    /// The queries it is joined to; it asks them to carry its cells.
    var combinedQueries: CombinedCellQueries? { get set }
    /// The cells a lookup should carry now; none when none needs it (``CellProvider/cellsToCarry``).
    var cellsToCarry: [ServingCell] { get }
    /// Takes the answer to a lookup that carried `asked` (``CellProvider/combinedQueryAnswered(_:for:)``).
    func combinedQueryAnswered(_ result: Result<HTTPResponse, HTTPFailure>, for asked: [ServingCell])
    /// Told that a lookup promised to carry the cells will not be sent (``CellProvider/wifiDeclined()``).
    func wifiDeclined()
}
