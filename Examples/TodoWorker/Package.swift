// swift-tools-version:6.0
// A worker for one new intent type, built on IntentQueue as a library.
import PackageDescription

let package = Package(
    name: "TodoWorker",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "IntentQueue", path: "../..")],
    targets: [
        .executableTarget(name: "TodoWorker", dependencies: [.product(name: "IntentQueue", package: "IntentQueue")])
    ],
    swiftLanguageModes: [.v6]
)
