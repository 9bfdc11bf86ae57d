package proxy

import "time"

// NoteReload records the outcome of a configuration reload (err is what
// Reload returned, nil when the new configuration applied) for the status
// page's "Last reload" line. The caller that reloads (the SIGHUP handler)
// calls it; Reload itself does not, since New calls Reload too.
func (s *Server) NoteReload(err error) {
	s.stats.reloaded(err, time.Now())
}
