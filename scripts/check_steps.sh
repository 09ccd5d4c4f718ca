# Sourced by the device check scripts (cuda_check.sh, pjrt_gpu_check.sh):
# step NAME SECONDS COMMAND... runs the command with a time limit, its
# output to $LOGS/NAME.log (the last lines echoed), and keeps in $status
# the exit status of the first step that failed.
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    local start=$SECONDS
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    tail -n 15 "$LOGS/$name.log"
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then status=$rc; fi
    return "$rc"
}
