// swift-tools-version:6.0
// A handler and its unit tests: the real worker pipeline on IntentTesting's
// in-memory transport, with a real SQLite file and no broker.
import PackageDescription

let package = Package(
    name: "Reminders",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "IntentQueue", path: "../..")],
    targets: [
        .target(name: "Reminders", dependencies: [.product(name: "IntentQueue", package: "IntentQueue")]),
        .testTarget(
            name: "RemindersTests",
            dependencies: ["Reminders", .product(name: "IntentTesting", package: "IntentQueue")]),
    ],
    swiftLanguageModes: [.v6]
)
