package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// WebhookConfig is kube-apiserver's --audit-webhook-* flags: where the
// events go and how they are batched.
type WebhookConfig struct {
	// KubeconfigFile names the webhook: its cluster's server URL and CA,
	// and the client certificate (or token) the API server presents.
	KubeconfigFile string
	// BufferSize is how many events wait to be sent; when it is full,
	// Write fails and the request is refused.
	BufferSize int
	// MaxBatchSize and MaxBatchWait bound a batch: it goes when it holds
	// MaxBatchSize events or its first has waited MaxBatchWait.
	MaxBatchSize int
	MaxBatchWait time.Duration
	// InitialBackoff is the wait before the first retry of a batch that
	// failed; it doubles with each retry, up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Timeout bounds one POST.
	Timeout time.Duration
}

// DefaultWebhookConfig has kube-apiserver's defaults for batching and the
// first retry.
func DefaultWebhookConfig() WebhookConfig {
	return WebhookConfig{
		BufferSize:     10000,
		MaxBatchSize:   400,
		MaxBatchWait:   30 * time.Second,
		InitialBackoff: 10 * time.Second,
		// Short: while the webhook is down its buffer fills and requests
		// are refused; once it is back, they should not wait long.
		MaxBackoff: 30 * time.Second,
		Timeout:    30 * time.Second,
	}
}

func (c WebhookConfig) Validate() error {
	var errs []error
	if c.KubeconfigFile == "" {
		errs = append(errs, errors.New("audit webhook kubeconfig is not set"))
	}
	for name, v := range map[string]int{"buffer size": c.BufferSize, "batch size": c.MaxBatchSize} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("audit webhook %s %d must be positive", name, v))
		}
	}
	for name, v := range map[string]time.Duration{"batch wait": c.MaxBatchWait, "initial backoff": c.InitialBackoff, "maximum backoff": c.MaxBackoff, "timeout": c.Timeout} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("audit webhook %s %s must be positive", name, v))
		}
	}
	return errors.Join(errs...)
}

// Webhook sends events to a webhook, as kube-apiserver's batch webhook
// backend does: POSTs of an audit.k8s.io/v1 EventList, over the TLS and
// credentials of a kubeconfig file (a client certificate for mutual TLS).
// A batch that fails is retried with backoff until it is delivered or the
// Webhook closes; meanwhile events wait in the buffer, and once it is full,
// Write fails, so that a request is refused rather than answered with an
// event that could not be kept. Events are acknowledged once buffered: the
// log backend is the one that holds every event before the response.
type Webhook struct {
	cfg    WebhookConfig
	url    string
	client *http.Client
	logger *slog.Logger

	mu     sync.RWMutex // guards closed against the send on buf
	closed bool
	buf    chan *auditv1.Event

	// ctx is cancelled at Close, closeAt set just before: batches go at
	// once, and retries go on for Timeout more.
	stop    context.CancelFunc
	ctx     context.Context
	closeAt time.Time
	done    chan struct{} // the loop has returned
	// undelivered counts the events the loop gave up at Close; read after
	// done.
	undelivered int
}

// NewWebhook loads cfg's kubeconfig and starts sending.
func NewWebhook(cfg WebhookConfig, logger *slog.Logger) (*Webhook, error) {
	errs := []error{cfg.Validate()}
	if logger == nil {
		errs = append(errs, errors.New("audit webhook logger is not set"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigFile)
	if err != nil {
		return nil, fmt.Errorf("audit webhook kubeconfig: %w", err)
	}
	rc.Timeout = cfg.Timeout
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("audit webhook kubeconfig: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &Webhook{cfg: cfg, url: rc.Host, client: client, logger: logger,
		buf: make(chan *auditv1.Event, cfg.BufferSize), ctx: ctx, stop: stop, done: make(chan struct{})}
	go w.loop()
	return w, nil
}

// ErrWebhookFull is Write's error when the buffer is full.
var ErrWebhookFull = errors.New("audit webhook buffer is full")

// Write queues ev to be sent; ev must not change after. It fails when the
// buffer is full or the Webhook closed.
func (w *Webhook) Write(ev *auditv1.Event) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return errors.New("audit webhook is closed")
	}
	select {
	case w.buf <- ev:
		return nil
	default:
		return ErrWebhookFull
	}
}

// Close refuses new events, sends what is buffered, retrying for Timeout
// at most, and returns an error naming how many events were not
// delivered.
func (w *Webhook) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.buf)
	w.mu.Unlock()
	w.closeAt = time.Now()
	w.stop()
	<-w.done
	if w.undelivered > 0 {
		return fmt.Errorf("%d audit events not delivered to the webhook", w.undelivered)
	}
	return nil
}

func (w *Webhook) loop() {
	defer close(w.done)
	for {
		batch, more := w.collect()
		if len(batch) > 0 {
			w.send(batch)
		}
		if !more {
			return
		}
	}
}

// collect waits for a first event, then gathers more until the batch is
// full, MaxBatchWait has passed, or the buffer is closed (more false).
func (w *Webhook) collect() (batch []*auditv1.Event, more bool) {
	ev, ok := <-w.buf
	if !ok {
		return nil, false
	}
	batch = append(batch, ev)
	timer := time.NewTimer(w.cfg.MaxBatchWait)
	defer timer.Stop()
	for len(batch) < w.cfg.MaxBatchSize {
		select {
		case ev, ok := <-w.buf:
			if !ok {
				return batch, false
			}
			batch = append(batch, ev)
		case <-timer.C:
			return batch, true
		case <-w.ctx.Done():
			// Closing: what is buffered goes at once.
			for len(batch) < w.cfg.MaxBatchSize {
				ev, ok := <-w.buf
				if !ok {
					return batch, false
				}
				batch = append(batch, ev)
			}
			return batch, true
		}
	}
	return batch, true
}

// send POSTs batch until it is delivered, waiting a doubling backoff
// between tries. Once the Webhook is closing, it keeps trying for Timeout
// from Close, then counts the batch undelivered.
func (w *Webhook) send(batch []*auditv1.Event) {
	list := auditv1.EventList{
		TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: auditv1.SchemeGroupVersion.String()},
		Items:    make([]auditv1.Event, len(batch)),
	}
	for i, ev := range batch {
		list.Items[i] = *ev
	}
	body, err := json.Marshal(&list)
	if err != nil {
		w.logger.Error("audit webhook: encode events", "err", err, "events", len(batch))
		w.undelivered += len(batch)
		return
	}
	backoff := w.cfg.InitialBackoff
	for {
		err := w.post(body)
		if err == nil {
			return
		}
		w.logger.Warn("audit webhook: send failed", "err", err, "events", len(batch), "retry_in", backoff)
		closing := w.ctx.Err() != nil
		if closing && time.Since(w.closeAt) > w.cfg.Timeout {
			w.undelivered += len(batch)
			return
		}
		wait := time.NewTimer(backoff)
		if closing {
			<-wait.C
		} else {
			select {
			case <-wait.C:
			case <-w.ctx.Done():
				wait.Stop()
			}
		}
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
}

func (w *Webhook) post(body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}
