// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "IntentQueue",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "IntentKit", targets: ["IntentKit"]),
        .library(name: "IntentAMQP", targets: ["IntentAMQP"]),
        .library(name: "IntentStore", targets: ["IntentStore"]),
        .library(name: "IntentWorker", targets: ["IntentWorker"]),
        .library(name: "IntentCLI", targets: ["IntentCLI"]),
        .library(name: "Hairdressers", targets: ["Hairdressers"]),
        .executable(name: "intent-worker", targets: ["intent-worker"]),
        .executable(name: "intent-submit", targets: ["intent-submit"]),
        .executable(name: "intent-status", targets: ["intent-status"]),
        .executable(name: "intent-bench", targets: ["intent-bench"]),
    ],
    targets: [
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "IntentKit"),
        .target(name: "IntentAMQP", dependencies: ["CRabbitMQ", "IntentKit"]),
        .target(name: "IntentStore", dependencies: ["CSQLite", "IntentKit"]),
        .target(name: "IntentWorker", dependencies: ["IntentKit", "IntentAMQP", "IntentStore"]),
        .target(name: "IntentCLI", dependencies: ["IntentKit", "IntentAMQP", "IntentStore"]),
        .target(name: "Hairdressers", dependencies: ["IntentKit", "IntentStore"]),
        .executableTarget(name: "intent-worker", dependencies: ["IntentWorker", "IntentCLI", "Hairdressers"]),
        .executableTarget(name: "intent-submit", dependencies: ["IntentCLI", "IntentAMQP", "IntentStore"]),
        .executableTarget(name: "intent-status", dependencies: ["IntentCLI", "IntentStore", "IntentAMQP", "Hairdressers"]),
        .executableTarget(
            name: "intent-bench",
            dependencies: ["IntentCLI", "IntentAMQP", "IntentStore", "IntentKit", "IntentWorker", "Hairdressers"]),
        .testTarget(name: "IntentKitTests", dependencies: ["IntentKit"]),
        .testTarget(name: "IntentStoreTests", dependencies: ["IntentStore"]),
        .testTarget(name: "IntentAMQPTests", dependencies: ["IntentAMQP"]),
        .testTarget(name: "IntentCLITests", dependencies: ["IntentCLI"]),
        .testTarget(name: "IntentWorkerTests", dependencies: ["IntentWorker", "IntentAMQP", "IntentStore"]),
        .testTarget(name: "HairdressersTests", dependencies: ["Hairdressers", "IntentStore"]),
        .testTarget(name: "IntegrationTests", dependencies: ["IntentKit", "IntentStore", "IntentAMQP"]),
    ],
    swiftLanguageModes: [.v6]
)
