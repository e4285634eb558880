package soak

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, path, want string
	}{
		{http.MethodPost, "/api/v1/namespaces/ns/pods/p/binding", kindBind},
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/p/status", kindPodStatus},
		{http.MethodPut, "/apis/scheduling.cardinal.dev/v1alpha1/queues/q/status", kindQueueStatus},
		{http.MethodPatch, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/g/status", kindGroupStatus},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods/p", kindPodDelete},
		// Reads and watches of resources.
		{http.MethodGet, "/api/v1/namespaces/ns/pods/p", kindRead},
		{http.MethodGet, "/api/v1/pods?limit=500", kindRead},
		{http.MethodGet, "/apis/scheduling.cardinal.dev/v1alpha1/queues", kindRead},
		{http.MethodGet, "/api/v1/pods?watch=true&resourceVersion=7", kindWatch},
		{http.MethodGet, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups?watch=1", kindWatch},
		// Discovery, leases, other writes, and names that look like resources.
		{http.MethodGet, "/api/v1", ""},
		{http.MethodGet, "/apis/scheduling.cardinal.dev/v1alpha1", ""},
		{http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/cardinal-system/leases/cardinal-scheduler", ""},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/cardinal-system/leases/cardinal-scheduler", ""},
		{http.MethodPut, "/apis/scheduling.cardinal.dev/v1alpha1/queues/pods/status", kindQueueStatus},
		{http.MethodDelete, "/api/v1/namespaces/pods", ""},
		{http.MethodPost, "/api/v1/namespaces/ns/events", ""},
	}
	for _, tc := range tests {
		if got := classify(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("classify(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
