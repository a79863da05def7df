package controllers

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// The annotations a Deployment's ReplicaSets carry, kube's: the revision
// of the template (which `kubectl rollout history` and `undo` read), the
// revisions it had before a rollback made it new again, and the size of
// the Deployment it was last scaled for (which proportional scaling
// reads).
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	// maxRevisionHistoryChars bounds the revision history annotation,
	// kube's default.
	maxRevisionHistoryChars = 2000
)

// notCopied are the Deployment's annotations its ReplicaSets do not take.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation:  true,
	revisionAnnotation:                  true,
	revisionHistoryAnnotation:           true,
	desiredReplicasAnnotation:           true,
	maxReplicasAnnotation:               true,
	"deprecated.deployment.rollback.to": true,
}

// sumOf is the sum over rss (nil ones skipped) of what count reads of
// each.
func sumOf(rss []*appsv1.ReplicaSet, count func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += count(rs)
		}
	}
	return n
}

func specReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumOf(rss, func(rs *appsv1.ReplicaSet) int32 {
		if rs.Spec.Replicas == nil {
			return 0
		}
		return *rs.Spec.Replicas
	})
}

func statusReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumOf(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas })
}

func readyReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumOf(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.ReadyReplicas })
}

func availableReplicas(rss []*appsv1.ReplicaSet) int32 {
	return sumOf(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
}

// activeReplicaSets are those of rss that want replicas.
func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && *rs.Spec.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// activeOrLatest is the only active ReplicaSet, or with none active the
// new one or else the newest old one; nil when several are active.
func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	oldRSs = slices.Clone(oldRSs)
	slices.SortFunc(oldRSs, func(a, b *appsv1.ReplicaSet) int { return byCreation(b, a) })
	active := activeReplicaSets(append(slices.Clone(oldRSs), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[0]
	case 1:
		return active[0]
	}
	return nil
}

// isSaturated: rs is the whole Deployment, all of it available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := replicasAnnotation(rs, desiredReplicasAnnotation)
	return ok && *rs.Spec.Replicas == *d.Spec.Replicas && desired == *d.Spec.Replicas && rs.Status.AvailableReplicas == *d.Spec.Replicas
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate != nil
}

// fenceposts are d's maxSurge and maxUnavailable as numbers of replicas:
// a percentage of surge rounds up, one of unavailability down, and both
// zero would stall a rollout, so unavailability is then one.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	ru := d.Spec.Strategy.RollingUpdate
	desired := int(*d.Spec.Replicas)
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(cmp.Or(ru.MaxSurge, &zero), desired, true)
	if err != nil {
		s = 0
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(cmp.Or(ru.MaxUnavailable, &zero), desired, false)
	if err != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, _ := fenceposts(d)
	return s
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, *d.Spec.Replicas)
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now: for
// a rolling update, as far as replicas+maxSurge in all allows; for
// Recreate, all of it.
func newRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRollingUpdate(d) {
		return *d.Spec.Replicas
	}
	maxTotal := *d.Spec.Replicas + maxSurge(d)
	current := specReplicas(allRSs)
	if current >= maxTotal {
		return *newRS.Spec.Replicas
	}
	up := min(maxTotal-current, *d.Spec.Replicas-*newRS.Spec.Replicas)
	return *newRS.Spec.Replicas + up
}

func replicasAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	return rs.Annotations[desiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[maxReplicasAnnotation] != strconv.Itoa(int(maxReplicas))
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if !replicasAnnotationsNeedUpdate(rs, desired, maxReplicas) {
		return false
	}
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	rs.Annotations[desiredReplicasAnnotation] = strconv.Itoa(int(desired))
	rs.Annotations[maxReplicasAnnotation] = strconv.Itoa(int(maxReplicas))
	return true
}

// setNewReplicaSetAnnotations gives the new ReplicaSet the Deployment's
// annotations and the revision newRevision; a ReplicaSet that had an
// older revision (a rollback to it) keeps that in its revision history.
// A ReplicaSet about to be created also gets its size annotations.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; notCopied[k] || ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	oldRevision, had := rs.Annotations[revisionAnnotation]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if had {
			// Not a number: left as it is rather than guessed at.
			return false
		}
		oldN = 0
	}
	newN, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldN < newN {
		rs.Annotations[revisionAnnotation] = newRevision
		changed = true
		if had {
			rs.Annotations[revisionHistoryAnnotation] = appendRevisionHistory(rs.Annotations[revisionHistoryAnnotation], oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds revision to a comma-separated history,
// dropping the oldest entries to stay within maxRevisionHistoryChars.
func appendRevisionHistory(history, revision string) string {
	if history == "" {
		return revision
	}
	entries := append(strings.Split(history, ","), revision)
	for len(strings.Join(entries, ",")) > maxRevisionHistoryChars && len(entries) > 1 {
		entries = entries[1:]
	}
	return strings.Join(entries, ",")
}

// revision is rs's revision; 0 if it has none.
func revision(rs *appsv1.ReplicaSet) int64 {
	n, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var n int64
	for _, rs := range rss {
		n = max(n, revision(rs))
	}
	return n
}

// byCreation orders ReplicaSets oldest first, then by name.
func byCreation(a, b *appsv1.ReplicaSet) int {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		if a.CreationTimestamp.Before(&b.CreationTimestamp) {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// byRevision orders ReplicaSets by revision, then oldest first.
func byRevision(a, b *appsv1.ReplicaSet) int {
	if c := cmp.Compare(revision(a), revision(b)); c != 0 {
		return c
	}
	return byCreation(a, b)
}

// bySizeThen orders ReplicaSets largest first; among equal ones, oldest
// first for age 1 and newest first for -1.
func bySizeThen(a, b *appsv1.ReplicaSet, age int) int {
	if c := cmp.Compare(*b.Spec.Replicas, *a.Spec.Replicas); c != 0 {
		return c
	}
	return age * byCreation(a, b)
}

// splitReplicaSets finds among rsList the new ReplicaSet, the oldest of
// d's template (nil if none), and the old ones, every other.
func splitReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := slices.Clone(rsList)
	slices.SortFunc(sorted, byCreation)
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// equalIgnoreHash compares two pod templates but for the
// pod-template-hash label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

// podTemplateHash names a template's ReplicaSet and labels its pods: an
// FNV-32a hash of the template's JSON and the Deployment's
// collisionCount, which grows when the name is taken, encoded as kube
// encodes it. JSON of a typed object is deterministic (fields in order,
// map keys sorted).
func podTemplateHash(t *corev1.PodTemplateSpec, collisionCount *int32) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	h := fnv.New32a()
	h.Write(b)
	if collisionCount != nil {
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(*collisionCount))
		h.Write(n[:])
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10)), nil
}

// withLabel is a copy of m with key=value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
