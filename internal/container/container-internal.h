/* Between the driver's files; not for other modules. */
#ifndef MG_CONTAINER_INTERNAL_H
#define MG_CONTAINER_INTERNAL_H

#include "internal/container/container.h"

extern const struct ctr_ops ctr_cli_ops;

int ctr_cli_run_command(const struct ctr_driver *d, const struct ctr_run_spec *spec,
                        struct strv *argv, struct strv *envp, struct mg_err **err);

/* --label K=V for each of the labels every container and network carries */
void ctr_push_labels(struct strv *a, const char *session, const char *server, pid_t owner);

int ctr_cli_sidecar_command(const struct ctr_driver *d, const struct ctr_sidecar_spec *spec,
                            struct strv *argv, struct strv *envp, struct mg_err **err);

/* podman here, local: its rootless namespaces can be entered (unshare) */
bool ctr_can_unshare(const struct ctr_driver *d);
/* podman unshare ARGS...: a command in rootless podman's user and mount
 * namespace, in_fd its stdin (-1: /dev/null); an error for docker */
int ctr_cli_unshare(const struct ctr_driver *d, const char *const *args, int in_fd,
                    struct mg_err **err);

#endif
