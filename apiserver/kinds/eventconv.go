package kinds

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kube keeps one Event type; events.k8s.io/v1 is another view of it. The
// two conversions below follow kube's (pkg/apis/events/v1/conversion.go):
// regarding is involvedObject, note is message, deprecatedSource is source,
// the deprecated timestamps and count are firstTimestamp, lastTimestamp and
// count, and every other field keeps its name (reportingController is
// core/v1's reportingComponent). Neither conversion shares memory with its
// input.

// EventToV1 converts an events.k8s.io/v1 Event to the core/v1 Event that
// trustplane stores. The result is typed v1/Event; nil converts to nil.
func EventToV1(e *eventsv1.Event) *corev1.Event {
	if e == nil {
		return nil
	}
	e = e.DeepCopy()
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// EventFromV1 converts a stored core/v1 Event to its events.k8s.io/v1 form.
// The result is typed events.k8s.io/v1/Event; nil converts to nil.
func EventFromV1(e *corev1.Event) *eventsv1.Event {
	if e == nil {
		return nil
	}
	e = e.DeepCopy()
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
