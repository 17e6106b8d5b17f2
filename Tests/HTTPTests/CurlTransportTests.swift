import HTTP
import Testing
