#!/bin/sh
# A kairos shell target: the prompt arrives on stdin (and in KAIROS_PROMPT).
# Exit 0 tells kairos the prompt was delivered; anything else records a failure.
set -eu
log="${KAIROS_EXAMPLE_LOG:-$HOME/kairos-prompts.log}"
{
    printf '%s task=%s run=%s late_by=%ss catch_up=%s\n' \
        "$KAIROS_SCHEDULED_FOR" "$KAIROS_TASK_ID" "$KAIROS_RUN_ID" "$KAIROS_LATE_BY_S" "$KAIROS_CATCH_UP"
    cat            # the prompt, from stdin
    printf '\n---\n'
} >>"$log"
