# Sourced by demo.sh and ui-test.sh: the settings cmp-worker and cmp-api share when both run on
# this machine beside a gateway-sim. Reads admin_url and db_name (the database, on the server of
# admin_url), redis_url, prefix, and the processes' addresses sim_addr, worker_addr, api_addr.
export CMP_DATABASE_URL=${admin_url%/*}/$db_name
export CMP_REDIS_URL=$redis_url
export CMP_REDIS_KEY_PREFIX=$prefix
export CMP_GATEWAY_URL=http://$sim_addr
export CMP_WORKER_BIND=$worker_addr
export CMP_API_BIND=$api_addr
export CMP_RETRY_INTERVAL_SECS=10
export CMP_LOG=${CMP_LOG:-info,sqlx=warn,sea_orm_migration=warn}
