package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/filelock"
)

// FileStore is a TokenStore in one JSON file, readable and writable by its
// owner only (mode 0600, in a directory of mode 0700: a change makes an
// existing directory 0700 too). Every change rewrites the file atomically
// (a temporary file renamed over it), so a reader sees a whole file. A
// change (Put, Delete) reads, changes and writes back the file under an
// advisory lock on "<path>.lock" (a symbolic link there is refused, never
// followed), so that several processes of one user (two CLI sessions
// logging in to different servers) never lose each other's tokens; on a
// platform without advisory locks the last writer wins.
type FileStore struct {
	path string
	mu   sync.Mutex
	now  func() time.Time

	// The last file read or written, reused while it is the same file
	// (every write renames a new one over it) with the same size and
	// modification time: one stat per Get on the call path.
	cache   []Entry
	cacheFI fs.FileInfo
	cached  bool
}

// NewFileStore returns a store that keeps its tokens in path.
func NewFileStore(path string) *FileStore { return &FileStore{path: path, now: time.Now} }

// DefaultFilePath is where the CLI keeps tokens: tokens.json under
// $XDG_STATE_HOME/agenthost, else ~/.local/state/agenthost.
func DefaultFilePath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agenthost", "tokens.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("oauth: no state directory: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "agenthost", "tokens.json"), nil
}

// Path is the file the store uses.
func (s *FileStore) Path() string { return s.path }

type fileToken struct {
	Subject      string    `json:"subject"`
	Resource     string    `json:"resource"`
	Issuer       string    `json:"issuer"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
	ClientID     string    `json:"client_id,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthMethod   string    `json:"token_endpoint_auth_method,omitempty"`
	DPoPKey      string    `json:"dpop_key,omitempty"`
	Saved        time.Time `json:"saved"`
}

type fileDoc struct {
	Version int         `json:"version"`
	Tokens  []fileToken `json:"tokens"`
}

func (s *FileStore) load() ([]Entry, error) {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.cached = false
		return nil, nil
	}
	if err == nil && s.cached && os.SameFile(fi, s.cacheFI) && fi.ModTime().Equal(s.cacheFI.ModTime()) && fi.Size() == s.cacheFI.Size() {
		return slices.Clone(s.cache), nil
	}
	return s.read()
}

// read reads the file, bypassing the cache.
func (s *FileStore) read() ([]Entry, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.cached = false
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the token file: %w", err)
	}
	var doc fileDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		// The error of encoding/json may quote the file: never a token.
		return nil, fmt.Errorf("oauth: the token file %s is not valid JSON", s.path)
	}
	out := make([]Entry, 0, len(doc.Tokens))
	for _, t := range doc.Tokens {
		key, err := jose.ParseDPoPKey(t.DPoPKey)
		if err != nil {
			return nil, fmt.Errorf("oauth: the token file %s: %w", s.path, err)
		}
		out = append(out, Entry{
			Key: Key{Subject: t.Subject, Resource: t.Resource, Issuer: t.Issuer},
			Token: &Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry,
				Scopes: t.Scopes, ClientID: t.ClientID, ClientSecret: t.ClientSecret, AuthMethod: t.AuthMethod, DPoPKey: key},
			Saved: t.Saved,
		})
	}
	s.remember(out)
	return slices.Clone(out), nil
}

// remember caches entries as the file's content.
func (s *FileStore) remember(entries []Entry) {
	fi, err := os.Stat(s.path)
	if err != nil {
		s.cached = false
		return
	}
	s.cache, s.cacheFI, s.cached = entries, fi, true
}

func (s *FileStore) save(entries []Entry) error {
	doc := fileDoc{Version: 1, Tokens: make([]fileToken, 0, len(entries))}
	for _, e := range entries {
		t := e.Token
		key, err := jose.MarshalDPoPKey(t.DPoPKey)
		if err != nil {
			return err
		}
		doc.Tokens = append(doc.Tokens, fileToken{
			Subject: e.Key.Subject, Resource: e.Key.Resource, Issuer: e.Key.Issuer,
			AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry, Scopes: t.Scopes,
			ClientID: t.ClientID, ClientSecret: t.ClientSecret, AuthMethod: t.AuthMethod, DPoPKey: key, Saved: e.Saved,
		})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: encoding the token file: %w", err)
	}
	if err := atomicfile.Write(s.path, data, 0o600); err != nil {
		return fmt.Errorf("oauth: writing the token file: %w", err)
	}
	s.remember(slices.Clone(entries))
	return nil
}

// Get implements TokenStore.
func (s *FileStore) Get(_ context.Context, key Key) (*Token, Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := s.load()
	if err != nil {
		return nil, Key{}, err
	}
	e, ok := find(entries, key)
	if !ok {
		return nil, Key{}, ErrNoToken
	}
	return copyToken(e.Token), e.Key, nil
}

// Put implements TokenStore.
func (s *FileStore) Put(ctx context.Context, key Key, tok *Token) error {
	if key.Issuer == "" || key.Resource == "" {
		return errors.New("oauth: a token key needs a resource and an issuer")
	}
	return s.change(ctx, func(entries []Entry) ([]Entry, bool) {
		return put(entries, Entry{Key: key, Token: copyToken(tok), Saved: s.now()}), true
	})
}

// Delete implements TokenStore.
func (s *FileStore) Delete(ctx context.Context, key Key) error {
	return s.change(ctx, func(entries []Entry) ([]Entry, bool) {
		n := len(entries)
		entries = remove(entries, key)
		return entries, len(entries) != n
	})
}

// change reads the file, applies edit and writes the result back (when
// edit says it changed something), all under the lock between processes.
// The file is read from disk, not from the cache: a write by another
// process within the file system's timestamp granularity may have left
// its size and modification time as they were.
func (s *FileStore) change(ctx context.Context, edit func([]Entry) ([]Entry, bool)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := privateDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	release, err := filelock.Lock(ctx, s.path+".lock")
	defer release()
	if err != nil && !errors.Is(err, filelock.ErrUnsupported) {
		return fmt.Errorf("oauth: locking the token file: %w", err)
	}
	entries, err := s.read()
	if err != nil {
		return err
	}
	entries, changed := edit(entries)
	if !changed {
		return nil
	}
	return s.save(entries)
}

// privateDir makes dir, the token file's directory, with mode 0700, and
// takes group and other permissions away from one that exists with them:
// MkdirAll leaves an existing directory's mode alone, and in a directory
// others can write to they could replace the token file or plant links.
// Not on Windows, where modes do not say who may open a file.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth: creating the state directory: %w", err)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("oauth: the state directory: %w", err)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("oauth: the state directory %s is open to other users (mode %04o) and cannot be made 0700: %w", dir, fi.Mode().Perm(), err)
	}
	return nil
}

// List implements TokenStore.
func (s *FileStore) List(_ context.Context) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := s.load()
	for i := range entries {
		entries[i].Token = copyToken(entries[i].Token)
	}
	return entries, err
}
