package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/datadir"
)

// clientConfig is the client configuration of a command that talks to a
// running cluster as an API client (bench, who-can), loaded as
// loadingRules say.
func clientConfig(kubeconfig, dir string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loadingRules(kubeconfig, dir), nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// clientset is a client of the cluster as clientConfig finds it, that
// names itself userAgent.
func clientset(kubeconfig, dir, userAgent string) (*kubernetes.Clientset, error) {
	restConfig, err := clientConfig(kubeconfig, dir)
	if err != nil {
		return nil, err
	}
	restConfig.UserAgent = userAgent
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", restConfig.Host, err)
	}
	return client, nil
}

// loadingRules find the kubeconfig as kubectl does, then in the data
// directory: the file given with --kubeconfig, else the files listed in
// $KUBECONFIG (merged), else admin.conf in dir.
func loadingRules(kubeconfig, dir string) *clientcmd.ClientConfigLoadingRules {
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case kubeconfig != "":
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	case env != "":
		return &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
	default:
		return &clientcmd.ClientConfigLoadingRules{ExplicitPath: datadir.Layout{Dir: dir}.Kubeconfig("admin")}
	}
}
