package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// event holds what both Event APIs print, in the core/v1 shape: kube
// converts an events.k8s.io/v1 Event to its internal core Event before
// printing it, so the two must print alike.
type event struct {
	name                          string
	typ, reason, message          string
	regarding                     corev1.ObjectReference
	source                        corev1.EventSource
	reportingController           string
	reportingInstance             string
	firstTimestamp, lastTimestamp metav1.Time
	eventTime                     metav1.MicroTime
	count                         int32
	series                        *corev1.EventSeries
}

func coreEventRow(e *corev1.Event, now time.Time) metav1.TableRow {
	return eventRow(event{
		name:                e.Name,
		typ:                 e.Type,
		reason:              e.Reason,
		message:             e.Message,
		regarding:           e.InvolvedObject,
		source:              e.Source,
		reportingController: e.ReportingController,
		reportingInstance:   e.ReportingInstance,
		firstTimestamp:      e.FirstTimestamp,
		lastTimestamp:       e.LastTimestamp,
		eventTime:           e.EventTime,
		count:               e.Count,
		series:              e.Series,
	}, now)
}

// eventsEventRow maps fields as kube's events/v1 conversion does: regarding
// is the involved object, note the message, and the deprecated* fields the
// core fields of the same name.
func eventsEventRow(e *eventsv1.Event, now time.Time) metav1.TableRow {
	ev := event{
		name:                e.Name,
		typ:                 e.Type,
		reason:              e.Reason,
		message:             e.Note,
		regarding:           e.Regarding,
		source:              e.DeprecatedSource,
		reportingController: e.ReportingController,
		reportingInstance:   e.ReportingInstance,
		firstTimestamp:      e.DeprecatedFirstTimestamp,
		lastTimestamp:       e.DeprecatedLastTimestamp,
		eventTime:           e.EventTime,
		count:               e.DeprecatedCount,
	}
	if e.Series != nil {
		ev.series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return eventRow(ev, now)
}

// eventRow renders an event. Events from the newer API carry eventTime and
// series instead of first/last timestamps and count, so each column falls
// back to those.
func eventRow(e event, now time.Time) metav1.TableRow {
	firstSeen := age(e.firstTimestamp.Time, now)
	if e.firstTimestamp.IsZero() {
		firstSeen = age(e.eventTime.Time, now)
	}
	lastSeen := age(e.lastTimestamp.Time, now)
	if e.lastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := e.count
	switch {
	case e.series != nil:
		lastSeen = age(e.series.LastObservedTime.Time, now)
		count = e.series.Count
	case count == 0:
		count = 1 // a singleton event of the new API has no count
	}

	object := strings.ToLower(e.regarding.Kind)
	if e.regarding.Name != "" {
		object = fmt.Sprintf("%s/%s", object, e.regarding.Name)
	}

	return metav1.TableRow{Cells: []any{
		lastSeen,
		e.typ,
		e.reason,
		object,
		e.regarding.FieldPath,
		eventSource(e.source, e.reportingController, e.reportingInstance),
		strings.TrimSpace(e.message),
		firstSeen,
		int64(count),
		e.name,
	}}
}

// eventSource is "component, host", or just the component when there is no
// host; reportingController and reportingInstance stand in for a missing
// component and host.
func eventSource(s corev1.EventSource, reportingController, reportingInstance string) string {
	component, host := s.Component, s.Host
	if component == "" {
		component = reportingController
	}
	if host == "" {
		host = reportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
