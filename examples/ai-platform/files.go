package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/pubsub"
	"github.com/redschema/redschema/queue"
)

// file is one uploaded file's metadata.
type file struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Name    string    `json:"name"`
	Size    int       `json:"size_bytes"`
	Status  string    `json:"status"` // uploaded, processed
	Words   int       `json:"words,omitempty"`
	Fence   int64     `json:"fence,omitempty"` // fencing token of the processing that wrote it
	Created time.Time `json:"created_at"`
	content string
}

// files is the platform's file store (in memory here; MinIO in the seed).
type files struct {
	mu      sync.Mutex
	by      map[string]*file
	store   string         // this store's ID: its contents are this process's
	changes map[string]int // per owner: processed files so far
}

func newFiles() *files {
	return &files{by: map[string]*file{}, store: randomHex(4), changes: map[string]int{}}
}

// version names the owner's searchable corpus as it is now: it changes
// with every processed file, so that cached retrievals (keyed by it) are
// never older than the corpus.
func (fs *files) version(owner string) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fmt.Sprintf("%s.%d", fs.store, fs.changes[owner])
}

// get returns a copy of the file if owner may see it.
func (fs *files) get(id, owner string) (file, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.by[id]
	if !ok || f.Owner != owner {
		return file{}, false
	}
	return *f, true
}

// FileJob is the payload of the "files" queue.
type FileJob struct {
	FileID string `json:"file_id"`
}

// listFiles lists the caller's files (cached 30 s per user, tag "files").
func (p *platform) listFiles(w http.ResponseWriter, r *http.Request) {
	owner := principalUser(r)
	p.files.mu.Lock()
	out := []file{}
	for _, f := range p.files.by {
		if f.Owner == owner {
			out = append(out, *f)
		}
	}
	p.files.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	reply(w, http.StatusOK, map[string]any{"files": out}, nil)
}

// getFile is one file's metadata (cached 300 s per user, tag "files").
func (p *platform) getFile(w http.ResponseWriter, r *http.Request) {
	f, ok := p.files.get(r.PathValue("id"), principalUser(r))
	if !ok {
		reply(w, 0, nil, errStatus(http.StatusNotFound, "no such file"))
		return
	}
	reply(w, http.StatusOK, f, nil)
}

// upload stores {"name","content"}, announces it on pubsub:files:uploaded,
// queues its processing and drops the cached file listings.
func (p *platform) upload(w http.ResponseWriter, r *http.Request) {
	var in struct{ Name, Content string }
	if err := decode(w, r, &in); err != nil {
		reply(w, 0, nil, err)
		return
	}
	if in.Name == "" {
		reply(w, 0, nil, errStatus(http.StatusBadRequest, "name required"))
		return
	}
	ctx, owner := r.Context(), principalUser(r)
	f := &file{ID: "f-" + randomHex(6), Owner: owner, Name: in.Name, Size: len(in.Content), Status: "uploaded", Created: time.Now(), content: in.Content}
	p.files.mu.Lock()
	p.files.by[f.ID] = f
	p.files.mu.Unlock()
	p.uploads.Add(int64(f.Size))
	if _, err := p.api.InvalidateTag(ctx, "files"); err != nil {
		reply(w, 0, nil, err)
		return
	}
	publish(ctx, p, pubsub.TopicFileUploaded(), pubsub.FileUploaded{FileID: f.ID, UserID: owner, Name: f.Name})
	job, err := p.jobs.Enqueue(ctx, FileJob{FileID: f.ID}, queue.WithID("process-"+f.ID))
	reply(w, http.StatusAccepted, map[string]string{"file_id": f.ID, "job_id": job}, err)
}

// processFile is the "files" worker: one worker at a time per file
// (lock:file:{id}, 60 s, kept alive by the watchdog), and the result is
// written only with a fencing token newer than the file's last one.
func (p *platform) processFile(ctx context.Context, j *queue.Job[FileJob]) error {
	id := j.Payload.FileID
	l, err := p.locks.TryAcquire(ctx, lock.File, id, p.locks.DefaultTTL(lock.File), lock.WithWatchdog(0))
	if err != nil {
		return err // held by another worker (lock.ErrNotObtained): retried with backoff
	}
	defer func() { _ = l.Release(context.WithoutCancel(ctx)) }()

	p.files.mu.Lock()
	f, ok := p.files.by[id]
	var content string
	if ok {
		content = f.content
	}
	p.files.mu.Unlock()
	if !ok {
		return nil // deleted meanwhile: nothing to do
	}
	select { // the work, under the lease's context
	case <-time.After(20 * time.Millisecond):
	case <-l.Context().Done():
		return context.Cause(l.Context())
	}
	words := len(strings.Fields(content))

	p.files.mu.Lock()
	if l.Fence() <= f.Fence { // a newer holder wrote already: this lease is stale
		p.files.mu.Unlock()
		return errors.New("stale fencing token")
	}
	f.Status, f.Words, f.Fence = "processed", words, l.Fence()
	p.files.changes[f.Owner]++
	p.files.mu.Unlock()
	if _, err := p.api.InvalidateTag(ctx, "files"); err != nil {
		return err
	}
	publish(ctx, p, pubsub.TopicFileProcessed(), pubsub.FileProcessed{FileID: id, Status: "processed"})
	return nil
}

// search finds the owner's processed files that mention a word of query:
// the RAG retrieval (a vector store in a real deployment).
func (fs *files) search(owner, query string) []map[string]string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []map[string]string
	for _, f := range fs.by {
		if f.Owner != owner || f.Status != "processed" {
			continue
		}
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if len(w) > 3 && strings.Contains(strings.ToLower(f.content), strings.Trim(w, "?.,!")) {
				out = append(out, map[string]string{"file_id": f.ID, "name": f.Name, "snippet": snippet(f.content, 80)})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["file_id"] < out[j]["file_id"] })
	return out
}

func snippet(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
