import Loop

/// A lookup provider's cache that its owner keeps durably: empty until the provider's first start reads what was
/// saved before, so that a daemon whose clients never need the provider never reads the file, and handed back to be
/// kept whenever the provider says.
@BusActor
struct PersistedCache<Contents> {
    /// What the cache holds; empty until ``loadOnce()``.
    var contents: Contents
    /// True once what was saved has been read.
    private(set) var isLoaded = false
    private let load: @BusActor () -> Contents
    private let keep: @BusActor (Contents) -> Void

    /// A cache holding `empty` until `load` reads what was saved; `keep` saves it durably.
    init(empty: Contents, load: @escaping @BusActor () -> Contents, keep: @escaping @BusActor (Contents) -> Void) {
        contents = empty
        self.load = load
        self.keep = keep
    }

    /// Reads what was saved, the first time only: for the provider's start.
    mutating func loadOnce() {
        guard !isLoaded else { return }
        contents = load()
        isLoaded = true
    }

    /// Hands the contents over to be kept.
    func save() { keep(contents) }
}
