import Testing

@testable import IntentWorker

/// The Prometheus text exposition format, written by hand.
@Suite struct MetricsTests {
    @Test func countersAndGaugesRenderWithHelpTypeAndSortedLabels() {
        let metrics = Metrics()
        metrics.declare("jobs_total", .counter, help: "Jobs done.")
        metrics.declare("depth", .gauge, help: "Queue depth.")
        metrics.increment("jobs_total", ["type": "SendMessage", "state": "success"])
        metrics.increment("jobs_total", ["state": "success", "type": "SendMessage"], by: 2)
        metrics.increment("jobs_total", ["type": "OrderSoup", "state": "failure"])
        metrics.set("depth", ["queue": "intents.work"], to: 7)
        #expect(
            metrics.render() == """
                # HELP jobs_total Jobs done.
                # TYPE jobs_total counter
                jobs_total{state="failure",type="OrderSoup"} 1
                jobs_total{state="success",type="SendMessage"} 3
                # HELP depth Queue depth.
                # TYPE depth gauge
                depth{queue="intents.work"} 7

                """)
        #expect(metrics.value("jobs_total", ["type": "SendMessage", "state": "success"]) == 3)
    }

    @Test func histogramsAreCumulativeWithSumAndCount() {
        let metrics = Metrics()
        metrics.declare("seconds", .histogram, help: "Durations.", buckets: [0.1, 1])
        metrics.observe("seconds", ["type": "A"], 0.05)
        metrics.observe("seconds", ["type": "A"], 0.5)
        metrics.observe("seconds", ["type": "A"], 3)
        #expect(
            metrics.render() == """
                # HELP seconds Durations.
                # TYPE seconds histogram
                seconds_bucket{type="A",le="0.1"} 1
                seconds_bucket{type="A",le="1"} 2
                seconds_bucket{type="A",le="+Inf"} 3
                seconds_sum{type="A"} 3.55
                seconds_count{type="A"} 3

                """)
    }

    @Test func constantLabelsGoOnEverySample() {
        let metrics = Metrics()
        metrics.declare("c", .counter, help: "C.")
        metrics.declare("h", .histogram, help: "H.", buckets: [1])
        metrics.increment("c")
        metrics.increment("c", ["type": "A"])
        metrics.observe("h", [:], 0.5)
        let text = metrics.render(constantLabels: ["process": "worker-1"])
        #expect(text.contains("c{process=\"worker-1\"} 1\n"))
        #expect(text.contains("c{process=\"worker-1\",type=\"A\"} 1\n"))
        #expect(text.contains("h_bucket{process=\"worker-1\",le=\"1\"} 1\n"))
        #expect(text.contains("h_count{process=\"worker-1\"} 1\n"))
    }

    @Test func labelValuesAreEscaped() {
        let metrics = Metrics()
        metrics.declare("odd", .counter, help: "Odd labels.")
        metrics.increment("odd", ["type": "a\"b\\c\nd"])
        #expect(metrics.render().contains(#"odd{type="a\"b\\c\nd"} 1"#))
    }

    @Test func anUndeclaredFamilyIsIgnoredAndClearEmptiesAGauge() {
        let metrics = Metrics()
        metrics.declare("g", .gauge, help: "G.")
        metrics.increment("nobody_declared_me")
        metrics.set("g", ["q": "x"], to: 1)
        metrics.clear("g")
        #expect(metrics.render() == "# HELP g G.\n# TYPE g gauge\n")
    }

    @Test func metricsLabelsAreEscapedScalarByScalarAndTheirNumberIsBounded() {
        let metrics = Metrics()
        metrics.declare("m_total", .counter, help: "a\r\nb")
        metrics.increment("m_total", ["type": "Send\r\nMessage\"\\"])
        let text = metrics.render()
        #expect(!text.contains("\r"), "\(text.debugDescription)")
        #expect(text.contains(#"type="Send\#u{FFFD}\nMessage\"\\""#), "\(text)")
        #expect(text.split(separator: "\n").allSatisfy { $0.hasPrefix("#") || $0.hasPrefix("m_total") }, "one line per sample")
        for index in 0..<(Metrics.maximumSeriesPerFamily + 100) {
            metrics.increment("m_total", ["type": "t\(index)"])
        }
        let samples = metrics.render().split(separator: "\n").filter { $0.hasPrefix("m_total{") }
        #expect(samples.count == Metrics.maximumSeriesPerFamily + 1, "past the bound, one 'other' series")
        #expect(metrics.value("m_total", ["type": "other"]) == 101)
    }
}
