# bash completion for rlctl(1), the scripting CLI of rlstore.
#
# Installed by `make install` as share/bash-completion/completions/rlctl,
# where bash-completion loads it on first use; or source it from ~/.bashrc.
#
# Completes commands, subcommands, the options of each command and the
# global ones, option values with a fixed set (--sort), file names (--db,
# --counters, --from-counters, init, apply, lint, copy-from), groups (--group),
# and, from the database named by --db (and --counters) or $RLSTORE_DB,
# action names, tier names and rule-set versions (through `rlctl rules`
# and `rlctl versions`, which only read).
#
# The tables below mirror the command table of cli/rlctl.c;
# tests/install/test_completion.sh compares them with `rlctl --help`, so they
# cannot drift apart.  Self-contained: needs no helper of bash-completion.

_rlctl_global_opts='--db --counters --shm-dir --now --json --quiet --help --version'
_rlctl_commands='init apply lint export rules versions rollback set-limit check refund reserve commit cancel usage explain block unblock blocks tier override reset audit events gc stats doctor copy-from metrics migrate hold help'

# _rlctl_subs COMMAND: its subcommands, if it has any.
_rlctl_subs()
{
    case $1 in
    tier) echo 'set unset list' ;;
    override) echo 'set unset list' ;;
    esac
}

# _rlctl_opts "COMMAND [SUB]": the command's own options.
_rlctl_opts()
{
    case $1 in
    init) echo '--mode --group' ;;
    apply) echo '--dry-run --check --force --comment' ;;
    rollback) echo '--comment' ;;
    set-limit) echo '--tier --burst --if-version --comment' ;;
    check) echo '--cost --peek --syslog' ;;
    refund) echo '--cost' ;;
    reserve) echo '--cost --ttl --syslog' ;;
    usage) echo '--action --key --top --sort' ;;
    explain) echo '--audit' ;;
    block) echo '--action --for --reason' ;;
    unblock) echo '--action --all --reason' ;;
    'tier set') echo '--action --for --reason' ;;
    'tier unset') echo '--action --reason' ;;
    'override set') echo '--for --reason' ;;
    'override unset') echo '--reason' ;;
    reset) echo '--action --reason' ;;
    'override list') echo '--action --key' ;;
    audit) echo '--limit --key --older-than --reason' ;;
    events) echo '--key --action --event --since --limit --older-than --reason' ;;
    metrics) echo '--output' ;;
    migrate) echo '--dry-run' ;;
    gc) echo '--rows' ;;
    stats) echo '--seconds --prometheus' ;;
    doctor) echo '--full --fix' ;;
    copy-from) echo '--rules --policy --counters --from-counters --dry-run' ;;
    hold) echo '--for --syslog' ;;
    esac
}

# _rlctl_args "COMMAND [SUB]": what each positional argument is.
_rlctl_args()
{
    case $1 in
    init | apply | lint) echo 'FILE' ;;
    export | rollback) echo 'VERSION' ;;
    set-limit) echo 'ACTION LIMITNAME VALUE' ;;
    check) echo 'ACTION KEY ACTION KEY ...' ;;   # pairs: one atomic batch
    refund | reserve | explain | reset) echo 'ACTION KEY' ;;
    commit | cancel) echo 'ID' ;;
    block | unblock | 'tier unset') echo 'KEY' ;;
    'tier set') echo 'KEY TIER' ;;
    'override set') echo 'ACTION KEY LIMITNAME LIMIT' ;;
    'override unset') echo 'ACTION KEY LIMITNAME' ;;
    copy-from) echo 'SRC' ;;
    help) echo 'COMMAND' ;;
    esac
}

# Options that take a value (the next word).
_rlctl_takes_value()
{
    case $1 in
    --db | --counters | --shm-dir | --now | --comment | --cost | --ttl | --action | --key | --top | \
        --sort | --audit | --for | --reason | --limit | --rows | --seconds | --mode | \
        --group | --from-counters | --tier | --if-version | --older-than | --event | \
        --since | --output) return 0 ;;
    esac
    return 1
}

# _rlctl_query WHAT: action or tier names, or versions, of the database on
# the command line ($_rlctl_db, with $_rlctl_counters in a split deployment)
# or in $RLSTORE_DB (and $RLSTORE_COUNTERS); nothing if there is none.
_rlctl_query()
{
    local -a db=()
    [ -n "$_rlctl_db" ] && db=(--db "$_rlctl_db")
    [ -n "$_rlctl_counters" ] && db+=(--counters "$_rlctl_counters")
    case $1 in
    actions | tiers)
        "$_rlctl_bin" "${db[@]}" rules 2>/dev/null </dev/null |
            while IFS=$'\t' read -r k v; do
                [ "$k" = "$1" ] && printf '%s\n' $v
            done ;;
    versions)
        "$_rlctl_bin" "${db[@]}" versions 2>/dev/null </dev/null | cut -f1 ;;
    esac
}

# File names (marked as such, so directories get a slash).
_rlctl_files()
{
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}

_rlctl()
{
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    local _rlctl_bin=${COMP_WORDS[0]} _rlctl_db= _rlctl_counters=
    local cmd= sub= i w nargs=0 dashdash=0
    local -a pos=()
    COMPREPLY=()

    # Walk the words before the cursor: global options and their values,
    # the command, its subcommand and the positional arguments so far.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [ $dashdash = 0 ] && [ "$w" = -- ]; then
            dashdash=1
        elif [ $dashdash = 0 ] && [[ $w == --* ]]; then
            if [[ $w == --db=* ]]; then
                _rlctl_db=${w#--db=}
            elif [[ $w == --counters=* ]]; then
                _rlctl_counters=${w#--counters=}
            elif [[ $w != *=* ]] && _rlctl_takes_value "$w"; then
                [ "$w" = --db ] && _rlctl_db=${COMP_WORDS[i + 1]}
                [ "$w" = --counters ] && _rlctl_counters=${COMP_WORDS[i + 1]}
                ((i++))
            fi
        elif [ -z "$cmd" ]; then
            cmd=$w
        elif [ -z "$sub" ] && [ -n "$(_rlctl_subs "$cmd")" ]; then
            sub=$w
        else
            pos+=("$w")
        fi
    done
    # Only a leading ~/ is expanded: the words are never evaluated.
    [[ $_rlctl_db == '~/'* ]] && _rlctl_db=$HOME/${_rlctl_db#'~/'}
    [[ $_rlctl_counters == '~/'* ]] && _rlctl_counters=$HOME/${_rlctl_counters#'~/'}

    # The value of an option.
    if [ $dashdash = 0 ] && _rlctl_takes_value "$prev"; then
        case $prev in
        --db | --counters | --from-counters) _rlctl_files ;;
        --shm-dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
        --group) COMPREPLY=($(compgen -g -- "$cur")) ;;
        --sort) COMPREPLY=($(compgen -W 'used key reset denied' -- "$cur")) ;;
        --action) COMPREPLY=($(compgen -W "$(_rlctl_query actions)" -- "$cur")) ;;
        esac
        return 0
    fi

    if [ $dashdash = 0 ] && [[ $cur == -* ]]; then
        local full=$cmd
        [ -n "$sub" ] && full="$cmd $sub"
        COMPREPLY=($(compgen -W "$(_rlctl_opts "$full") $_rlctl_global_opts" -- "$cur"))
        return 0
    fi

    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$_rlctl_commands" -- "$cur"))
        return 0
    fi
    if [ -z "$sub" ] && [ -n "$(_rlctl_subs "$cmd")" ]; then
        COMPREPLY=($(compgen -W "$(_rlctl_subs "$cmd")" -- "$cur"))
        return 0
    fi

    local full=$cmd
    [ -n "$sub" ] && full="$cmd $sub"
    local -a kinds=($(_rlctl_args "$full"))
    local kind=${kinds[${#pos[@]}]}
    [ "$full" = check ] && kind=${kinds[$((${#pos[@]} % 2))]}   # ACTION KEY pairs
    case $kind in
    FILE | SRC) _rlctl_files ;;
    ACTION) COMPREPLY=($(compgen -W "$(_rlctl_query actions)" -- "$cur")) ;;
    TIER) COMPREPLY=($(compgen -W "$(_rlctl_query tiers)" -- "$cur")) ;;
    VERSION) COMPREPLY=($(compgen -W "$(_rlctl_query versions)" -- "$cur")) ;;
    COMMAND) [ ${#pos[@]} = 0 ] && COMPREPLY=($(compgen -W "$_rlctl_commands" -- "$cur")) ;;
    esac
    return 0
}

complete -F _rlctl rlctl
