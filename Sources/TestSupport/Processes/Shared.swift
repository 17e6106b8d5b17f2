import Synchronization

/// A value shared between a test and the threads of this file.
public final class Shared<Value: Sendable>: Sendable {
    private let state: Mutex<Value>
    public init(_ value: Value) { state = Mutex(value) }
    public var value: Value {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
    /// Changes the value under the lock and returns what `body` returns.
    public func update<T: Sendable>(_ body: (inout Value) -> T) -> T { state.withLock { body(&$0) } }
}
