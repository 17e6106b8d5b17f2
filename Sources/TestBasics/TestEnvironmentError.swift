/// A missing or broken test component. Tests fail with it; they never skip.
public struct TestEnvironmentError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
