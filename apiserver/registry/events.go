package registry

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// eventsResource serves events.k8s.io/v1 Events from the core/v1 Events
// they are stored as, as kube-apiserver does: one set of events, two APIs.
func eventsResource(coreEvents *Resource) *Resource {
	toCore := func(obj runtime.Object) *corev1.Event {
		if obj == nil {
			return nil
		}
		return kinds.EventToV1(obj.(*eventsv1.Event))
	}
	return &Resource{
		GVR: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event",
		Namespaced: true, ShortNames: []string{"ev"},
		NewObject:     func() runtime.Object { return &eventsv1.Event{} },
		NewList:       func() runtime.Object { return &eventsv1.EventList{} },
		NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
		Validate: func(obj, old runtime.Object) field.ErrorList {
			return kinds.ValidateEvent(toCore(obj), toCore(old))
		},
		Fields: func(obj runtime.Object) fields.Set { return kinds.EventFields(toCore(obj)) },
		View: &View{
			Stored:     coreEvents,
			ToStored:   func(obj runtime.Object) runtime.Object { return toCore(obj) },
			FromStored: func(obj runtime.Object) runtime.Object { return kinds.EventFromV1(obj.(*corev1.Event)) },
		},
	}
}
