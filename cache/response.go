package cache

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Response is an HTTP response as the middleware caches it: a Cache of
// Response stores it as a JSON object {"status", "header", "etag",
// "pattern", "body"}, the body embedded as JSON when it is JSON (as the
// AI platform's API responses are) and as a base64 string, with
// "body_base64": true, otherwise.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	ETag   string
	// Pattern is the http.ServeMux pattern that matched the request
	// whose handler produced the response ("GET /api/files/{id}"; "" when
	// no mux matched): the middleware sets it on the requests it answers
	// from the cache, so that a metrics middleware outside it labels a
	// hit with its route.
	Pattern string
}

type responseJSON struct {
	Status     int             `json:"status"`
	Header     http.Header     `json:"header,omitempty"`
	ETag       string          `json:"etag,omitempty"`
	Pattern    string          `json:"pattern,omitempty"`
	Body       json.RawMessage `json:"body"`
	BodyBase64 bool            `json:"body_base64,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (r Response) MarshalJSON() ([]byte, error) {
	j := responseJSON{Status: r.Status, Header: r.Header, ETag: r.ETag, Pattern: r.Pattern}
	if len(r.Body) > 0 && json.Valid(r.Body) {
		var b bytes.Buffer
		if err := json.Compact(&b, r.Body); err == nil && b.Len() == len(r.Body) {
			j.Body = r.Body
		}
	}
	if j.Body == nil {
		enc, err := json.Marshal(r.Body)
		if err != nil {
			return nil, err
		}
		j.Body, j.BodyBase64 = enc, true
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Response) UnmarshalJSON(data []byte) error {
	var j responseJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*r = Response{Status: j.Status, Header: j.Header, ETag: j.ETag, Pattern: j.Pattern}
	if j.BodyBase64 {
		return json.Unmarshal(j.Body, &r.Body)
	}
	if len(j.Body) > 0 && string(j.Body) != "null" {
		r.Body = []byte(j.Body)
	}
	return nil
}
