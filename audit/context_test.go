package audit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
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
