import WiFi
import Testing
