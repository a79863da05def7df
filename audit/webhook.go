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
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// The webhook's modes, kube-apiserver's --audit-webhook-mode.
const (
	// ModeBatch buffers events and sends them in batches, from a
	// goroutine of the Webhook's: an event is acknowledged once buffered,
	// and a full buffer refuses the request.
	ModeBatch = "batch"
	// ModeBlocking sends each event before Write returns: a response goes
	// out only once its event is delivered, and is refused if it cannot
	// be. A RequestReceived event that cannot be delivered is kept by the
	// log alone, and the request goes on (see Union).
	ModeBlocking = "blocking"
	// ModeBlockingStrict is ModeBlocking in which a RequestReceived event
	// that cannot be delivered refuses the request too, before it is
	// handled.
	ModeBlockingStrict = "blocking-strict"
)

// WebhookModes are the modes, in the order the flag's help names them.
var WebhookModes = []string{ModeBatch, ModeBlocking, ModeBlockingStrict}

// WebhookConfig is kube-apiserver's --audit-webhook-* flags: where the
// events go and how they are batched.
type WebhookConfig struct {
	// KubeconfigFile names the webhook: its cluster's server URL and CA,
	// and the client certificate (or token) the API server presents.
	KubeconfigFile string
	// Mode is one of WebhookModes. The batch fields below count in
	// ModeBatch only.
	Mode string
	// BufferSize is how many events wait to be sent; when it is full,
	// Write fails and the request is refused.
	BufferSize int
	// MaxBatchSize and MaxBatchWait bound a batch: it goes when it holds
	// MaxBatchSize events or its first has waited MaxBatchWait.
	MaxBatchSize int
	MaxBatchWait time.Duration
	// ThrottleEnable limits the batches sent to ThrottleQPS a second,
	// with bursts of ThrottleBurst: past that, events wait in the buffer.
	ThrottleEnable bool
	ThrottleQPS    float32
	ThrottleBurst  int
	// InitialBackoff is the wait before the first retry of a POST that
	// failed; it doubles with each retry, up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Timeout bounds one POST in ModeBatch, and in the blocking modes
	// every try to send one event, together.
	Timeout time.Duration
}

// DefaultWebhookConfig has kube-apiserver's defaults for batching and the
// first retry.
func DefaultWebhookConfig() WebhookConfig {
	return WebhookConfig{
		Mode:           ModeBatch,
		BufferSize:     10000,
		MaxBatchSize:   400,
		MaxBatchWait:   30 * time.Second,
		InitialBackoff: 10 * time.Second,
		// Short: while the webhook is down its buffer fills and requests
		// are refused; once it is back, they should not wait long.
		MaxBackoff:     30 * time.Second,
		Timeout:        30 * time.Second,
		ThrottleEnable: true,
		ThrottleQPS:    10,
		ThrottleBurst:  15,
	}
}

func (c WebhookConfig) Validate() error {
	var errs []error
	if c.KubeconfigFile == "" {
		errs = append(errs, errors.New("audit webhook kubeconfig is not set"))
	}
	if !slices.Contains(WebhookModes, c.Mode) {
		errs = append(errs, fmt.Errorf("audit webhook mode %q: want one of %s", c.Mode, strings.Join(WebhookModes, ", ")))
	}
	if c.ThrottleEnable && (c.ThrottleQPS <= 0 || c.ThrottleBurst <= 0) {
		errs = append(errs, fmt.Errorf("audit webhook throttle of %g a second, bursts of %d: both must be positive", c.ThrottleQPS, c.ThrottleBurst))
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

// Webhook sends events to a webhook, as kube-apiserver's webhook backend
// does: POSTs of an audit.k8s.io/v1 EventList, over the TLS and
// credentials of a kubeconfig file (a client certificate for mutual TLS).
//
// In ModeBatch, a batch that fails is retried with backoff until it is
// delivered or the Webhook closes; meanwhile events wait in the buffer,
// and once it is full, Write fails, so that a request is refused rather
// than answered with an event that could not be kept. Events are
// acknowledged once buffered: the log backend is the one that holds every
// event before the response. In the blocking modes, Write sends its event
// itself, retried with backoff for Timeout at most, and fails if it is not
// delivered.
type Webhook struct {
	cfg    WebhookConfig
	url    string
	client *http.Client
	logger *slog.Logger
	// throttle limits the batches sent; nil when not throttled.
	throttle flowcontrol.RateLimiter

	// mu guards closed against the send on buf, and against the POSTs of
	// the blocking modes, which Close waits for.
	mu     sync.RWMutex
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
	w := &Webhook{cfg: cfg, url: rc.Host, client: client, logger: logger, ctx: ctx, stop: stop, done: make(chan struct{})}
	if cfg.Mode != ModeBatch {
		close(w.done)
		return w, nil
	}
	if cfg.ThrottleEnable {
		w.throttle = flowcontrol.NewTokenBucketRateLimiter(cfg.ThrottleQPS, cfg.ThrottleBurst)
	}
	w.buf = make(chan *auditv1.Event, cfg.BufferSize)
	go w.loop()
	return w, nil
}

// Mode is the Webhook's mode, one of WebhookModes.
func (w *Webhook) Mode() string { return w.cfg.Mode }

// ErrWebhookFull is Write's error when the buffer is full.
var ErrWebhookFull = errors.New("audit webhook buffer is full")

// Write queues ev to be sent, in ModeBatch; ev must not change after. It
// fails when the buffer is full or the Webhook closed. In the blocking
// modes, it sends ev, and fails if ev is not delivered.
func (w *Webhook) Write(ev *auditv1.Event) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return errors.New("audit webhook is closed")
	}
	if w.cfg.Mode != ModeBatch {
		return w.sendNow(ev)
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
	if w.buf != nil {
		close(w.buf)
	}
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
			// Once closing, what is left goes at once.
			if w.throttle != nil && w.ctx.Err() == nil {
				w.throttle.Wait(w.ctx)
			}
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

// eventList is the body that sends events.
func eventList(events []*auditv1.Event) ([]byte, error) {
	list := auditv1.EventList{
		TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: auditv1.SchemeGroupVersion.String()},
		Items:    make([]auditv1.Event, len(events)),
	}
	for i, ev := range events {
		list.Items[i] = *ev
	}
	return json.Marshal(&list)
}

// sendNow POSTs ev alone, in the blocking modes, retrying with a doubling
// backoff for Timeout at most.
func (w *Webhook) sendNow(ev *auditv1.Event) error {
	body, err := eventList([]*auditv1.Event{ev})
	if err != nil {
		return fmt.Errorf("encode audit event: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	backoff := w.cfg.InitialBackoff
	for {
		err := w.post(ctx, body)
		if err == nil {
			return nil
		}
		deadline, _ := ctx.Deadline()
		if time.Until(deadline) < backoff {
			return err
		}
		w.logger.Warn("audit webhook: send failed", "err", err, "audit_id", ev.AuditID, "retry_in", backoff)
		time.Sleep(backoff)
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
}

// send POSTs batch until it is delivered, waiting a doubling backoff
// between tries. Once the Webhook is closing, it keeps trying for Timeout
// from Close, then counts the batch undelivered.
func (w *Webhook) send(batch []*auditv1.Event) {
	body, err := eventList(batch)
	if err != nil {
		w.logger.Error("audit webhook: encode events", "err", err, "events", len(batch))
		w.undelivered += len(batch)
		return
	}
	backoff := w.cfg.InitialBackoff
	for {
		err := w.postOnce(body)
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

// postOnce POSTs body, for Timeout at most.
func (w *Webhook) postOnce(body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	return w.post(ctx, body)
}

func (w *Webhook) post(ctx context.Context, body []byte) error {
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
