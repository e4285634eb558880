package main

import (
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/testutil"
)

// The scheduler metrics the report reads, as kube-scheduler's own
// scheduler_perf harness does.
const (
	attemptMetric = "scheduler_scheduling_attempt_duration_seconds"
	pluginMetric  = "scheduler_plugin_execution_duration_seconds"
	// A scheduled pod's attempt runs from its pop to its bind: the
	// algorithm (PreFilter to Score), then Reserve, Permit and, in the
	// binding cycle, the Bind call to the API server. These two split it.
	algorithmMetric      = "scheduler_scheduling_algorithm_duration_seconds"
	extensionPointMetric = "scheduler_framework_extension_point_duration_seconds"
)

// metricSet is one scrape of a scheduler's /metrics.
type metricSet struct {
	families map[string]*dto.MetricFamily
}

func parseMetrics(r io.Reader) (*metricSet, error) {
	f, err := testutil.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return &metricSet{families: f}, nil
}

// histograms are the histograms of a metric whose labels match.
func (m *metricSet) histograms(name string, labels map[string]string) testutil.HistogramVec {
	var out testutil.HistogramVec
	f := m.families[name]
	if f == nil {
		return nil
	}
	for _, metric := range f.GetMetric() {
		if h := metric.GetHistogram(); h != nil && testutil.LabelsMatch(metric, labels) {
			out = append(out, &testutil.Histogram{Histogram: h})
		}
	}
	return out
}

// attempt is the q-quantile of successful scheduling attempts, in ms.
func (m *metricSet) attempt(q float64) float64 {
	vec := m.histograms(attemptMetric, map[string]string{"result": "scheduled"})
	if vec.GetAggregatedSampleCount() == 0 {
		return 0
	}
	return vec.Quantile(q) * 1000
}

// algorithm is the q-quantile of the scheduling algorithm's time, in ms:
// the part of an attempt that is the scheduler's own work on the pod.
func (m *metricSet) algorithm(q float64) float64 {
	return m.quantile(algorithmMetric, nil, q)
}

// bindMean is the mean time of successful Bind extension points, in ms:
// the part of an attempt spent writing the binding to the API server,
// which grows with how fast pods are scheduled, not with how. A mean, as
// the histogram's buckets end at 204.8 ms, below the tail.
func (m *metricSet) bindMean() float64 {
	vec := m.histograms(extensionPointMetric, map[string]string{"extension_point": "Bind", "status": "Success"})
	var sum float64
	var n uint64
	for _, h := range vec {
		sum += h.GetSampleSum()
		n += h.GetSampleCount()
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n) * 1000
}

func (m *metricSet) quantile(name string, labels map[string]string, q float64) float64 {
	vec := m.histograms(name, labels)
	if vec.GetAggregatedSampleCount() == 0 {
		return 0
	}
	return vec.Quantile(q) * 1000
}

// pluginP99 is the p99 execution time of each Cardinal plugin at each
// extension point, in ms, keyed "Plugin/ExtensionPoint" (plugin metrics
// are sampled: kube-scheduler records about one cycle in ten).
func (m *metricSet) pluginP99() map[string]float64 {
	out := map[string]float64{}
	f := m.families[pluginMetric]
	if f == nil {
		return out
	}
	keys := map[string]map[string]string{}
	for _, metric := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range metric.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if strings.HasPrefix(labels["plugin"], "Cardinal") {
			keys[labels["plugin"]+"/"+labels["extension_point"]] = map[string]string{"plugin": labels["plugin"], "extension_point": labels["extension_point"]}
		}
	}
	for key, labels := range keys {
		vec := m.histograms(pluginMetric, labels)
		if vec.GetAggregatedSampleCount() > 0 {
			out[key] = vec.Quantile(0.99) * 1000
		}
	}
	return out
}

// requestCounts reads kube-apiserver's apiserver_request_total, summed by
// verb, resource, subresource and code and keyed "verb resource/sub code",
// and the total latency of each, keyed "verb resource/sub seconds".
func requestCounts(r io.Reader) (map[string]float64, error) {
	f, err := testutil.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, metric := range f["apiserver_request_total"].GetMetric() {
		out[requestKey(metric)+" "+label(metric, "code")] += metric.GetCounter().GetValue()
	}
	for _, metric := range f["apiserver_request_duration_seconds"].GetMetric() {
		out[requestKey(metric)+" seconds"] += metric.GetHistogram().GetSampleSum()
	}
	return out, nil
}

// requestKey is a request metric's "verb resource/subresource".
func requestKey(m *dto.Metric) string {
	key := label(m, "verb") + " " + label(m, "resource")
	if sub := label(m, "subresource"); sub != "" {
		key += "/" + sub
	}
	return key
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
