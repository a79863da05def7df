package kinds

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The grammar of an image reference as container runtimes parse it:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain [ ":" port ] "/" ] path-component { "/" path-component }
//
// kube defaults imagePullPolicy from the tag this grammar yields, so a
// reference the grammar refuses defaults like one with a non-latest tag.
const (
	refAlnum          = `[a-z0-9]+`
	refSeparator      = `(?:[._]|__|[-]+)`
	refPathComponent  = refAlnum + `(?:` + refSeparator + refAlnum + `)*`
	refDomainLabel    = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refDomainName     = refDomainLabel + `(?:\.` + refDomainLabel + `)*`
	refIPv6           = `\[(?:[a-fA-F0-9:]+)\]`
	refDomainAndPort  = `(?:` + refDomainName + `|` + refIPv6 + `)(?::[0-9]+)?`
	refName           = `(?:` + refDomainAndPort + `/)?` + refPathComponent + `(?:/` + refPathComponent + `)*`
	refTag            = `[\w][\w.-]{0,127}`
	refDigest         = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}`
	refNameMaxLength  = 255
	refDefaultDomain  = "docker.io"
	refLegacyDomain   = "index.docker.io"
	refOfficialPrefix = "library/"
)

// Compiled once; a *regexp.Regexp is safe for concurrent use and never changes.
var (
	referenceRE = regexp.MustCompile(`^(` + refName + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	hexIDRE     = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// defaultPullPolicy is kube's imagePullPolicy default: Always when the image
// resolves to the "latest" tag (written out, or implied by giving neither a
// tag nor a digest), IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if tag, ok := imageTag(image); ok && tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag a runtime would pull for image: the tag written
// in it, or "latest" when it has neither tag nor digest, or "" when it pins
// only a digest. ok is false when image is not a valid reference.
func imageTag(image string) (tag string, ok bool) {
	if hexIDRE.MatchString(image) {
		// A bare image ID is not a repository name.
		return "", false
	}
	domain, remainder := splitDomain(image)
	repo := remainder
	if i := strings.IndexByte(remainder, ':'); i >= 0 {
		repo = remainder[:i]
	}
	if strings.ToLower(repo) != repo {
		return "", false
	}
	m := referenceRE.FindStringSubmatch(domain + "/" + remainder)
	if m == nil || len(m[1]) > refNameMaxLength {
		return "", false
	}
	tag, digest := m[2], m[3]
	if digest != "" && !validDigest(digest) {
		return "", false
	}
	if tag == "" && digest == "" {
		tag = "latest"
	}
	return tag, true
}

// splitDomain separates the registry from the repository path the way
// runtimes normalise names: the first path element is a registry only when
// it looks like a host (contains "." or ":", is "localhost", or has
// uppercase letters, which Docker Hub namespaces never do); otherwise the
// image lives on Docker Hub, under library/ when it has no namespace.
func splitDomain(name string) (domain, remainder string) {
	first, rest, found := strings.Cut(name, "/")
	switch {
	case !found:
		return refDefaultDomain, refOfficialPrefix + name
	case first == "localhost", strings.ContainsAny(first, ".:"), strings.ToLower(first) != first:
		domain, remainder = first, rest
	default:
		domain, remainder = refDefaultDomain, name
	}
	if domain == refLegacyDomain {
		domain = refDefaultDomain
	}
	if domain == refDefaultDomain && !strings.Contains(remainder, "/") {
		remainder = refOfficialPrefix + remainder
	}
	return domain, remainder
}

// validDigest reports whether digest names an algorithm runtimes support,
// with a lowercase hex encoding of that algorithm's length.
func validDigest(digest string) bool {
	algorithm, hex, _ := strings.Cut(digest, ":")
	var want int
	switch algorithm {
	case "sha256":
		want = 64
	case "sha384":
		want = 96
	case "sha512":
		want = 128
	default:
		return false
	}
	return len(hex) == want && strings.ToLower(hex) == hex
}
