/* SPDX-License-Identifier: Apache-2.0 */
/* notify.h - tell systemd about readiness and state (self-contained, no libsystemd). */
#ifndef MC_DAEMON_NOTIFY_H
#define MC_DAEMON_NOTIFY_H

/* Sends a state string ("READY=1", "STOPPING=1", "STATUS=...") to
 * $NOTIFY_SOCKET.  0 if sent or if not running under systemd, else MC_ERR_*
 * (MC_ERR_INVALID_PARAMS: a malformed $NOTIFY_SOCKET). */
int mc_notify(const char *state);

#endif
