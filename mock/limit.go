package mock

import "time"

// window is the hidden rate limit: the requests admitted in the last
// sliding minute and their tokens. Rejected requests do not count.
type window struct {
	rpm, tpm int
	admitted []admission // oldest first
	tokens   int         // sum of admitted[i].tokens
}

type admission struct {
	at     time.Time
	tokens int
}

// limitState is the window as a response reports it.
type limitState struct {
	limited     bool
	byTokens    bool          // the token limit refused, not the request limit
	retryAfter  time.Duration // when limited: until the request would fit
	reqRemain   int
	tokRemain   int
	reqReset    time.Duration // until the next request slot frees
	tokReset    time.Duration // until the oldest tokens leave the window
	requested   int           // tokens the request asked for
	usedTokens  int
	usedRequest int
}

// admit records a request of tokens at now if both limits allow it.
func (w *window) admit(now time.Time, tokens int) limitState {
	if w.rpm == 0 && w.tpm == 0 {
		return limitState{}
	}
	cutoff := now.Add(-time.Minute)
	drop := 0
	for drop < len(w.admitted) && !w.admitted[drop].at.After(cutoff) {
		w.tokens -= w.admitted[drop].tokens
		drop++
	}
	w.admitted = w.admitted[drop:]

	st := limitState{requested: tokens, usedTokens: w.tokens, usedRequest: len(w.admitted)}
	switch {
	case w.rpm > 0 && len(w.admitted)+1 > w.rpm:
		st.limited = true
		// The request fits once the entry that fills the last slot expires.
		st.retryAfter = w.admitted[len(w.admitted)-w.rpm].at.Add(time.Minute).Sub(now)
	case w.tpm > 0 && w.tokens+tokens > w.tpm:
		st.limited, st.byTokens = true, true
		st.retryAfter = time.Minute // a request larger than the limit never fits
		freed := 0
		for _, a := range w.admitted {
			freed += a.tokens
			if w.tokens-freed+tokens <= w.tpm {
				st.retryAfter = a.at.Add(time.Minute).Sub(now)
				break
			}
		}
	default:
		w.admitted = append(w.admitted, admission{at: now, tokens: tokens})
		w.tokens += tokens
	}
	st.reqRemain = max(w.rpm-len(w.admitted), 0)
	st.tokRemain = max(w.tpm-w.tokens, 0)
	if len(w.admitted) > 0 {
		oldest := w.admitted[0].at.Add(time.Minute).Sub(now)
		st.reqReset, st.tokReset = oldest, oldest
	}
	return st
}
