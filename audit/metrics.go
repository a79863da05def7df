package audit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts audit events as kube-apiserver does, under its names, in
// a registry of the server's own rather than a global one.
type Metrics struct {
	events   prometheus.Counter
	errors   *prometheus.CounterVec
	rejected prometheus.Counter
}

// NewMetrics registers the audit counters with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_event_total",
			Help: "Counter of audit events generated and sent to the audit backend.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_audit_error_total",
			Help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
		}, []string{"plugin"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_requests_rejected_total",
			Help: "Counter of apiserver requests rejected due to an error in audit logging backend.",
		}),
	}
	// Shown at 0 before the first error, so that an alert on it has a
	// series to watch.
	m.errors.WithLabelValues(LogPlugin)
	var errs []error
	for _, c := range []prometheus.Collector{m.events, m.errors, m.rejected} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Event counts an event sent to a backend.
func (m *Metrics) Event() { m.events.Inc() }

// Error counts an event that a backend failed to store: the one a
// PluginError names, the log otherwise.
func (m *Metrics) Error(err error) {
	plugin := LogPlugin
	if pe, ok := errors.AsType[*PluginError](err); ok {
		plugin = pe.Plugin
	}
	m.errors.WithLabelValues(plugin).Inc()
}

// Rejected counts a request refused because its event was not stored.
func (m *Metrics) Rejected() { m.rejected.Inc() }
