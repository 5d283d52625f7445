#!/usr/bin/env bash
# Prints the environment (`export DOCKER_HOST=...`) for a Docker engine the tests can use:
# nothing when `docker info` already answers; otherwise the Podman engine that
# ../shared/container-engine/setup.sh installs and serves (machines with only the docker CLI).
# Use:  eval "$(bash docker/engine-env.sh ../shared)"
set -euo pipefail
shared=${1:?usage: engine-env.sh SHARED-FOLDER}
setup="$shared/container-engine/setup.sh"
if [[ ! -f $setup ]] || docker info >/dev/null 2>&1; then
    exit 0  # an engine answers already, or there is no Podman set-up to start one
fi
setup="$(cd "$(dirname "$setup")" && pwd)/setup.sh"
# Started from /: the engine (and each container's conmon) keeps the working directory it was
# started in, and a deleted clone there makes every later `docker run` fail.
cd /
# The engine runs netavark, which runs iptables from an sbin folder: a PATH without them (a
# clean `env -i` shell, cron) left an engine whose every `docker run` failed ("netavark: No such
# file or directory").
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
exec bash "$setup"
