package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// events.k8s.io/v1 and core/v1 serve one set of events.
func TestEventsAreOneSetInTwoAPIs(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	list, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	now := metav1.NewMicroTime(time.Now())
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "scheduled.1"},
		EventTime:           now,
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:              "Scheduled",
		Note:                "assigned default/web to n1",
		Type:                corev1.EventTypeNormal,
		Action:              "Binding",
		ReportingController: "trustplane-scheduler",
		ReportingInstance:   "trustplane-scheduler-1",
	}
	created, err := cs.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Note != ev.Note || created.Regarding.Name != "web" || created.ResourceVersion == "" {
		t.Errorf("created %+v", created)
	}
	core, err := cs.CoreV1().Events("default").Get(ctx, "scheduled.1", metav1.GetOptions{})
	if err != nil || core.Message != ev.Note || core.InvolvedObject.Name != "web" || core.ReportingController != "trustplane-scheduler" {
		t.Fatalf("the event through core/v1: %+v %v", core, err)
	}
	byField, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Scheduled"})
	if err != nil || len(byField.Items) != 1 {
		t.Errorf("core events by field: %v %v", byField, err)
	}
	select {
	case got := <-w.ResultChan():
		if got.Type != watch.Added || got.Object.(*eventsv1.Event).Note != ev.Note {
			t.Errorf("events.k8s.io watch: %v %+v", got.Type, got.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the events.k8s.io watch")
	}
	core.Message = "changed through core"
	if _, err := cs.CoreV1().Events("default").Update(ctx, core, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	back, err := cs.EventsV1().Events("default").Get(ctx, "scheduled.1", metav1.GetOptions{})
	if err != nil || back.Note != "changed through core" {
		t.Errorf("the change through events.k8s.io: %+v %v", back, err)
	}
	if err := cs.EventsV1().Events("default").Delete(ctx, "scheduled.1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, _ := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("after deleting through events.k8s.io, core lists %d", len(l.Items))
	}
}
