// swift-tools-version:6.0
// A worker for one new intent type, built on IntentQueue as a library.
import PackageDescription

let package = Package(
    name: "TodoWorker",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "IntentQueue", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "TodoWorker",
            dependencies: [
                .product(name: "IntentKit", package: "IntentQueue"),
                .product(name: "IntentAMQP", package: "IntentQueue"),
                .product(name: "IntentStore", package: "IntentQueue"),
                .product(name: "IntentWorker", package: "IntentQueue"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
