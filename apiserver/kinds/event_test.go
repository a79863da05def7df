package kinds

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// legacyEvent is an event as client-go's record package writes it.
func legacyEvent() *corev1.Event {
	ev := &corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u1", APIVersion: "v1"},
		Reason:         "Pulled",
		Message:        "Successfully pulled image",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(time.Unix(1700000000, 0)),
		LastTimestamp:  metav1.NewTime(time.Unix(1700000000, 0)),
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
	ev.Name, ev.Namespace = "web.17a", "default"
	return ev
}

// newStyleEvent is an event as events.k8s.io clients write it.
func newStyleEvent() *corev1.Event {
	ev := &corev1.Event{
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:              "Scheduled",
		Message:             "Successfully assigned default/web to node-1",
		Type:                corev1.EventTypeNormal,
		EventTime:           metav1.NewMicroTime(time.Unix(1700000000, 0)),
		Action:              "Binding",
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-node-0",
	}
	ev.Name, ev.Namespace = "web.17b", "default"
	return ev
}

func TestValidateEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		event  func() *corev1.Event
		mutate func(e *corev1.Event)
		want   []string
	}{
		{"legacy", legacyEvent, func(e *corev1.Event) {}, nil},
		{"legacy about a cluster-scoped object in default", legacyEvent, func(e *corev1.Event) {
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, nil},
		{"legacy with a custom type", legacyEvent, func(e *corev1.Event) { e.Type = "Critical" }, nil},
		{"legacy in another namespace than its object", legacyEvent, func(e *corev1.Event) { e.Namespace = "kube-system" },
			[]string{e("involvedObject.namespace", invalid)}},
		{"legacy about a cluster-scoped object outside default", legacyEvent, func(e *corev1.Event) {
			e.Namespace = "team-a"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, []string{e("involvedObject.namespace", invalid)}},
		{"namespace missing", legacyEvent, func(e *corev1.Event) { e.Namespace, e.InvolvedObject.Namespace = "", "" },
			[]string{e("namespace", invalid)}},
		{"new style", newStyleEvent, func(e *corev1.Event) {}, nil},
		{"new style about a cluster-scoped object in kube-system", newStyleEvent, func(e *corev1.Event) {
			e.Namespace = "kube-system"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, nil},
		{"new style about a cluster-scoped object elsewhere", newStyleEvent, func(e *corev1.Event) {
			e.Namespace = "team-a"
			e.InvolvedObject = corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, []string{e("involvedObject.namespace", invalid)}},
		{"new style without reporter, action or reason", newStyleEvent, func(e *corev1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
		}, []string{
			// An empty name is also not a qualified name; kube says so twice.
			e("reportingController", required), e("reportingController", invalid), e("reportingController", invalid),
			e("reportingInstance", required), e("action", required), e("reason", required)}},
		{"new style with a reporter that is not a qualified name", newStyleEvent, func(e *corev1.Event) {
			e.ReportingController = "default scheduler"
		}, []string{e("reportingController", invalid)}},
		{"new style with over-long fields", newStyleEvent, func(e *corev1.Event) {
			e.ReportingInstance = strings.Repeat("i", 129)
			e.Action = strings.Repeat("a", 129)
			e.Reason = strings.Repeat("r", 129)
			e.Message = strings.Repeat("m", 1025)
		}, []string{e("reportingInstance", invalid), e("action", invalid), e("reason", invalid), e("message", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.event()
			tc.mutate(ev)
			checkErrs(t, ValidateEvent(ev, nil), tc.want...)
			checkErrs(t, ValidateEvent(ev, tc.event()), tc.want...)
		})
	}
}

func TestDefaultEventChangesNothing(t *testing.T) {
	ev := legacyEvent()
	DefaultEvent(ev)
	DefaultEvent(nil)
	if !equality.Semantic.DeepEqual(ev, legacyEvent()) {
		t.Errorf("DefaultEvent changed the event:\n%s", cmp.Diff(legacyEvent(), ev))
	}
}

func TestEventFields(t *testing.T) {
	ev := legacyEvent()
	ev.InvolvedObject.ResourceVersion, ev.InvolvedObject.FieldPath = "42", "spec.containers{web}"
	want := map[string]string{
		"metadata.name":                  "web.17a",
		"metadata.namespace":             "default",
		"involvedObject.kind":            "Pod",
		"involvedObject.namespace":       "default",
		"involvedObject.name":            "web",
		"involvedObject.uid":             "u1",
		"involvedObject.apiVersion":      "v1",
		"involvedObject.resourceVersion": "42",
		"involvedObject.fieldPath":       "spec.containers{web}",
		"reason":                         "Pulled",
		"reportingComponent":             "",
		"source":                         "kubelet",
		"type":                           "Normal",
	}
	if diff := cmp.Diff(want, map[string]string(EventFields(ev))); diff != "" {
		t.Errorf("EventFields (-want +got):\n%s", diff)
	}
	// Without a source, "source" matches the reporting controller.
	got := EventFields(newStyleEvent())
	if got["source"] != "default-scheduler" || got["reportingComponent"] != "default-scheduler" {
		t.Errorf("source = %q, reportingComponent = %q, want both default-scheduler", got["source"], got["reportingComponent"])
	}
}

// fullEventsV1 sets every field of an events.k8s.io/v1 Event.
func fullEventsV1() *eventsv1.Event {
	micro := metav1.NewMicroTime(time.Date(2024, 5, 1, 10, 0, 0, 123000, time.UTC))
	ev := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		EventTime:                micro,
		Series:                   &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(time.Date(2024, 5, 1, 10, 5, 0, 0, time.UTC))},
		ReportingController:      "example.com/controller",
		ReportingInstance:        "controller-0",
		Action:                   "Reconcile",
		Reason:                   "Failed",
		Regarding:                corev1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web", UID: "u1", APIVersion: "apps/v1", ResourceVersion: "7", FieldPath: "spec"},
		Related:                  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"},
		Note:                     "reconcile failed",
		Type:                     corev1.EventTypeWarning,
		DeprecatedSource:         corev1.EventSource{Component: "controller", Host: "node-1"},
		DeprecatedFirstTimestamp: metav1.NewTime(time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)),
		DeprecatedLastTimestamp:  metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)),
		DeprecatedCount:          5,
	}
	ev.ObjectMeta = metav1.ObjectMeta{Name: "web.1", Namespace: "default", UID: "e1", ResourceVersion: "9",
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}
	return ev
}

func TestEventConversion(t *testing.T) {
	in := fullEventsV1()
	core := EventToV1(in)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"typed core/v1", core.TypeMeta, metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}},
		{"regarding is involvedObject", core.InvolvedObject, in.Regarding},
		{"note is message", core.Message, in.Note},
		{"deprecatedSource is source", core.Source, in.DeprecatedSource},
		{"deprecatedFirstTimestamp", core.FirstTimestamp, in.DeprecatedFirstTimestamp},
		{"deprecatedLastTimestamp", core.LastTimestamp, in.DeprecatedLastTimestamp},
		{"deprecatedCount", core.Count, in.DeprecatedCount},
		{"reportingController is reportingComponent", core.ReportingController, in.ReportingController},
		{"reportingInstance", core.ReportingInstance, in.ReportingInstance},
		{"eventTime", core.EventTime, in.EventTime},
		{"series", *core.Series, corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}},
		{"action", core.Action, in.Action},
		{"reason", core.Reason, in.Reason},
		{"type", core.Type, in.Type},
		{"related", core.Related, in.Related},
		{"metadata", core.ObjectMeta, in.ObjectMeta},
	} {
		if !equality.Semantic.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	if back := EventFromV1(core); !equality.Semantic.DeepEqual(back, in) {
		t.Errorf("events.k8s.io round trip (-in +out):\n%s", cmp.Diff(in, back))
	}
	if again := EventToV1(EventFromV1(core)); !equality.Semantic.DeepEqual(again, core) {
		t.Errorf("core/v1 round trip (-in +out):\n%s", cmp.Diff(core, again))
	}

	// The results own their memory.
	core.Related.Name = "changed"
	core.Series.Count = 99
	core.Labels["a"] = "changed"
	if !equality.Semantic.DeepEqual(in, fullEventsV1()) {
		t.Error("EventToV1 result shares memory with its input")
	}
	out := EventFromV1(legacyEvent())
	if out.Regarding.Name != "web" || out.Series != nil || out.Related != nil {
		t.Errorf("EventFromV1(legacy) = %+v", out)
	}
	if EventToV1(nil) != nil || EventFromV1(nil) != nil {
		t.Error("nil events must convert to nil")
	}
}
