/// The spatial index of the regions: which regions a position can lie in, without looking at all of them.
///
/// The globe is cut into cells of ``cellDegrees`` (about 11 km north–south, less east–west away from the
/// equator). A region is listed in every cell that the bounding box of its circle touches (its latitudes
/// exactly, its longitudes by asin(sin δ / cos φ) for the angular radius δ, both widened by
/// ``boundingMargin``), as long as those are at most ``maximumCellsPerRegion`` cells; a larger region, or one
/// whose circle reaches a pole, is kept in a list of large regions that every query returns. So a region that
/// contains a position is always among the cell's regions and the large ones; a query costs the regions of one
/// cell (or of the few cells around a position) plus the large regions, not all regions.
struct RegionGrid: Sendable {
    /// A cell's size in degrees of latitude and of longitude.
    static let cellDegrees = 0.1
    /// Cells per degree.
    private static let cellsPerDegree = 10.0
    /// The rows of cells, south to north.
    private static let rows = 1800
    /// The columns of cells, west to east from the antimeridian.
    private static let columns = 3600
    /// The most cells a region of the grid is listed in; larger ones are kept among the large regions.
    static let maximumCellsPerRegion = 36
    /// How far, in metres, bounding boxes reach beyond the circle, against rounding.
    static let boundingMargin = 1.0

    private struct Cell: Hashable, Sendable {
        var row: Int
        var column: Int
    }

    /// The cells a circle's bounding box touches: rows, and columns (nil: all of them, the box reaching round
    /// the globe or over a pole).
    private struct Span {
        var rows: ClosedRange<Int>
        var columns: [Int]?

        var cellCount: Int { rows.count * (columns?.count ?? RegionGrid.columns) }
    }

    private var cells: [Cell: Set<UInt64>] = [:]
    /// The regions too large for the cells.
    private(set) var large: Set<UInt64> = []
    /// The largest radius of any region put in the cells, in metres (not lowered when it leaves).
    private var maximumCellRadius = 0.0

    /// Lists region `number`, the circle of `radius` metres around `latitude`, `longitude`.
    mutating func insert(_ number: UInt64, latitude: Double, longitude: Double, radius: Double) {
        guard let cellsOfRegion = RegionGrid.cells(latitude: latitude, longitude: longitude, radius: radius) else {
            large.insert(number)
            return
        }
        maximumCellRadius = max(maximumCellRadius, radius)
        for cell in cellsOfRegion { cells[cell, default: []].insert(number) }
    }

    /// Forgets region `number`, listed with the same circle.
    mutating func remove(_ number: UInt64, latitude: Double, longitude: Double, radius: Double) {
        guard let cellsOfRegion = RegionGrid.cells(latitude: latitude, longitude: longitude, radius: radius) else {
            large.remove(number)
            return
        }
        for cell in cellsOfRegion {
            cells[cell]?.remove(number)
            if cells[cell]?.isEmpty == true { cells[cell] = nil }
        }
    }

    /// The regions that may contain the position: every region whose circle does is among them.
    func candidates(containing latitude: Double, _ longitude: Double) -> Set<UInt64> {
        large.union(cells[RegionGrid.cell(latitude, longitude)] ?? [])
    }

    /// The regions that may have a centre within `distance` metres beyond their radius from the position: every
    /// region whose boundary is nearer than `distance` outside it, or that contains it, is among them.
    func candidates(within distance: Double, of latitude: Double, _ longitude: Double) -> Set<UInt64> {
        var found = large
        let span = RegionGrid.span(latitude: latitude, longitude: longitude, radius: distance + maximumCellRadius)
        if let columns = span.columns, span.cellCount <= cells.count {
            for row in span.rows {
                for column in columns { found.formUnion(cells[Cell(row: row, column: column)] ?? []) }
            }
        } else {
            for (cell, numbers) in cells where span.rows.contains(cell.row) {
                if span.columns?.contains(cell.column) ?? true { found.formUnion(numbers) }
            }
        }
        return found
    }

    /// The cells of a region of the grid, or nil for a large region.
    private static func cells(latitude: Double, longitude: Double, radius: Double) -> [Cell]? {
        let span = span(latitude: latitude, longitude: longitude, radius: radius)
        guard let columns = span.columns, span.cellCount <= maximumCellsPerRegion else { return nil }
        return span.rows.flatMap { row in columns.map { Cell(row: row, column: $0) } }
    }

    private static func span(latitude: Double, longitude: Double, radius: Double) -> Span {
        let angle = (radius + boundingMargin) / meanEarthRadius
        let degrees = angle * 180 / Double.pi
        let rows = row(latitude - degrees)...row(latitude + degrees)
        guard latitude + degrees < 90, latitude - degrees > -90 else { return Span(rows: rows, columns: nil) }
        let reach = sine(angle) / cosine(latitude * Double.pi / 180)
        guard reach < 1 else { return Span(rows: rows, columns: nil) }
        let longitudes = arcsine(reach) * 180 / Double.pi
        let west = unwrappedColumn(longitude - longitudes)
        let east = unwrappedColumn(longitude + longitudes)
        guard east - west + 1 < columns else { return Span(rows: rows, columns: nil) }
        return Span(rows: rows, columns: (west...east).map(wrapped))
    }

    private static func cell(_ latitude: Double, _ longitude: Double) -> Cell {
        Cell(row: row(latitude), column: wrapped(unwrappedColumn(longitude)))
    }

    private static func row(_ latitude: Double) -> Int {
        min(rows - 1, max(0, Int(floorOf((latitude + 90) * cellsPerDegree))))
    }

    /// The column of `longitude` counted from −180, not wrapped round (the longitude may lie beyond ±180).
    private static func unwrappedColumn(_ longitude: Double) -> Int { Int(floorOf((longitude + 180) * cellsPerDegree)) }

    private static func wrapped(_ column: Int) -> Int { ((column % columns) + columns) % columns }
}
