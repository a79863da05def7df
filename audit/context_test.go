package audit

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// A record keeps the objects its level allows and no more; outside an
// audited request, recording does nothing.
func TestRecordLevels(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}
	tests := []struct {
		level             auditv1.Level
		request, response bool
	}{
		{auditv1.LevelMetadata, false, false},
		{auditv1.LevelRequest, true, false},
		{auditv1.LevelRequestResponse, true, true},
	}
	for _, tt := range tests {
		rec := NewRecord(tt.level, "id-1")
		ctx := WithRecord(context.Background(), rec)
		LogRequestObject(ctx, obj)
		LogResponseObject(ctx, obj)
		LogObjectName(ctx, "cm")
		LogImpersonated(ctx, &user.DefaultInfo{Name: "alice"})
		Annotate(ctx, "k", "v")
		ev := &auditv1.Event{ObjectRef: &auditv1.ObjectReference{Resource: "configmaps"}}
		rec.Fill(ev)
		if got := ev.RequestObject != nil; got != tt.request {
			t.Errorf("level %s: request object recorded %v, want %v", tt.level, got, tt.request)
		}
		if got := ev.ResponseObject != nil; got != tt.response {
			t.Errorf("level %s: response object recorded %v, want %v", tt.level, got, tt.response)
		}
		if ev.Level != tt.level || ev.AuditID != "id-1" || ev.ObjectRef.Name != "cm" || ev.ImpersonatedUser.Username != "alice" || ev.Annotations["k"] != "v" {
			t.Errorf("level %s: event %+v", tt.level, ev)
		}
	}
	// No record: nothing to do, nothing to fail.
	ctx := context.Background()
	LogRequestObject(ctx, obj)
	Annotate(ctx, "k", "v")
}

// omitManagedFields leaves managedFields out of the objects recorded, a
// list's items' too, and leaves the caller's objects as they were; without
// it, they are kept.
func TestRecordOmitManagedFields(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", ManagedFields: mf}}
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{*cm.DeepCopy()}}
	for _, omit := range []bool{true, false} {
		p, err := ParsePolicy(fmt.Appendf(nil, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitManagedFields: %t\nrules:\n- level: RequestResponse\n", omit))
		if err != nil {
			t.Fatal(err)
		}
		d := p.Decide(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "create", Resource: "configmaps", ResourceRequest: true})
		rec := d.Record("id-1")
		ctx := WithRecord(context.Background(), rec)
		LogRequestObject(ctx, cm)
		LogResponseObject(ctx, list)
		ev := &auditv1.Event{}
		rec.Fill(ev)
		for name, u := range map[string]*runtime.Unknown{"request": ev.RequestObject, "response": ev.ResponseObject} {
			if u == nil {
				t.Fatalf("omitManagedFields %t: no %s object recorded", omit, name)
			}
			if got := bytes.Contains(u.Raw, []byte(`"managedFields"`)); got == omit {
				t.Errorf("omitManagedFields %t: the %s object has managedFields %t: %s", omit, name, got, u.Raw)
			}
		}
	}
	if len(cm.ManagedFields) != 1 || len(list.Items[0].ManagedFields) != 1 {
		t.Error("the caller's objects lost their managedFields")
	}
}

// An event keeps the annotations it was filled with: the request's next
// annotation goes to its next event only.
func TestRecordAnnotationsPerEvent(t *testing.T) {
	rec := NewRecord(auditv1.LevelMetadata, "id-1")
	ctx := WithRecord(context.Background(), rec)
	Annotate(ctx, "a", "1")
	first := &auditv1.Event{}
	rec.Fill(first)
	Annotate(ctx, "b", "2")
	second := &auditv1.Event{}
	rec.Fill(second)
	if len(first.Annotations) != 1 || first.Annotations["a"] != "1" {
		t.Errorf("the first event's annotations %v, want a=1 alone", first.Annotations)
	}
	if len(second.Annotations) != 2 || second.Annotations["b"] != "2" {
		t.Errorf("the second event's annotations %v, want a=1 and b=2", second.Annotations)
	}
}
