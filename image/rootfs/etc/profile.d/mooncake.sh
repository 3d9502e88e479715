# SPDX-License-Identifier: Apache-2.0
# /etc/profile.d/mooncake.sh -- login shells on the appliance find the
# cluster: MOONCAKE_RPC (this host's master), MOONCAKE_TOKEN_FILE (the admin
# token) and MOONCAKE_CLUSTER_SECRET_FILE (the cluster secret), both
# readable by root and the group mooncake, as mooncake-appliance.service
# wrote them at boot.
if [ -r /run/mooncake-appliance/env ]; then
	. /run/mooncake-appliance/env
	export MOONCAKE_RPC MOONCAKE_TOKEN_FILE MOONCAKE_CLUSTER_SECRET_FILE
fi
