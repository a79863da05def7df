package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func TestWatchFollowsChanges(t *testing.T) {
	ts := startServer(t)
	for _, contentType := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(contentType, func(t *testing.T) {
			cfg := ts.restConfig(t, admin)
			cfg.ContentType = contentType
			cfg.AcceptContentTypes = contentType
			cs := kubernetes.NewForConfigOrDie(cfg)
			ctx := testContext(t)
			cms := cs.CoreV1().ConfigMaps("default")
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, LabelSelector: "team=a"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Labels: map[string]string{"team": "a"}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != cm.Name {
				t.Fatalf("event %v %v, want ADDED %s", ev.Type, ev.Object, cm.Name)
			}
			cm.Data = map[string]string{"k": "v"}
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.ConfigMap).Data["k"] != "v" {
				t.Fatalf("event %v, want MODIFIED with data", ev.Type)
			}
			// It stops matching the selector: DELETED for this watcher.
			cm.Labels["team"] = "b"
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
				t.Fatalf("event %v %v, want DELETED at %s", ev.Type, ev.Object, cm.ResourceVersion)
			}
			cm.Labels["team"] = "a"
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Added {
				t.Fatalf("event %v, want ADDED when it matches again", ev.Type)
			}
			if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.Type != watch.Deleted || ev.Object.(*corev1.ConfigMap).Name != cm.Name {
				t.Fatalf("event %v, want DELETED", ev.Type)
			}
		})
	}
}

func TestWatchTooOldIsExpired(t *testing.T) {
	ts := startServer(t)
	_, err := ts.clientset(t, admin).CoreV1().ConfigMaps("default").Watch(testContext(t), metav1.ListOptions{ResourceVersion: "1"})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from resourceVersion 1: %v, want Expired", err)
	}
}

// The watch-list protocol: initial ADDED events, then a bookmark marking
// their end.
func TestWatchListSendsInitialEventsThenBookmark(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := ts.httpClient(t, admin).Get(ts.url + "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var types []string
	for sc.Scan() {
		var ev struct {
			Type   string           `json:"type"`
			Object corev1.ConfigMap `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		types = append(types, ev.Type)
		if ev.Type == "BOOKMARK" {
			if ev.Object.Annotations[metav1.InitialEventsAnnotationKey] != "true" || ev.Object.ResourceVersion == "" {
				t.Errorf("bookmark %+v lacks the initial-events-end annotation or a resourceVersion", ev.Object.ObjectMeta)
			}
			break
		}
	}
	want := []string{"ADDED", "ADDED", "ADDED", "BOOKMARK"}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}

	bad, err := ts.httpClient(t, admin).Get(ts.url + "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true")
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, bad); bad.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("sendInitialEvents without resourceVersionMatch: %d %s, want 422", bad.StatusCode, st.Message)
	}
}

// A watch allowed for one object by resourceNames streams that object only,
// not others whose names begin with its name.
func TestWatchOfOneObjectIsExact(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for _, n := range []string{"db", "db-admin"} {
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "db-only"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gina-db"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "db-only"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "gina"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gina := ts.httpClient(t, &identity{user: "gina"})
	var resp *http.Response
	eventually(t, "gina may watch db", func() error {
		var err error
		resp, err = gina.Get(ts.url + "/api/v1/watch/namespaces/default/secrets/db?timeoutSeconds=2")
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	defer resp.Body.Close()
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-two"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"name":"db"`) || strings.Contains(string(body), "db-admin") || strings.Contains(string(body), "db-two") {
		t.Errorf("the watch of db streamed %s", body)
	}
}
