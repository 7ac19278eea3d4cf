#!/usr/bin/env bash
# Builds the libraries' documentation offline with the toolchain's DocC: symbol
# graphs from the debug build (`swift package dump-symbol-graph`), then one
# archive per library module into .build/docs/<Module>.doccarchive, from its
# catalog (Sources/<Module>/<Module>.docc) when it has one. Every warning (a
# broken link, an unknown parameter) fails the build, and so does a public
# declaration without a doc comment.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(IntentKit IntentClient IntentQueue IntentTesting IntentStore IntentAMQP IntentWorker IntentGateway)

# Every public declaration of the libraries is documented.
undocumented=$(swift-format lint --configuration .swift-format-api -r "${modules[@]/#/Sources/}" 2>&1 | grep AllPublicDeclarationsHaveDocumentation || true)
if [[ -n "$undocumented" ]]; then
    echo "$undocumented" >&2
    echo "docs.sh: $(wc -l <<<"$undocumented") public declarations have no doc comment" >&2
    exit 1
fi

graphs=$(swift package dump-symbol-graph --minimum-access-level public --skip-inherited-docs | sed -n 's/^Files written to //p')
[[ -d "$graphs" ]] || { echo "docs.sh: no symbol graphs in $graphs" >&2; exit 1; }

out=.build/docs
rm -rf "$out"
mkdir -p "$out"
for module in "${modules[@]}"; do
    work=$(mktemp -d)
    # The module's own graph and its extensions of other modules' types.
    cp "$graphs/$module.symbols.json" "$work/"
    cp "$graphs/$module"@*.symbols.json "$work/" 2>/dev/null || true
    catalog="Sources/$module/$module.docc"
    if [[ ! -d "$catalog" ]]; then
        catalog="$work/$module.docc"
        mkdir -p "$catalog"
    fi
    if ! docc convert "$catalog" --fallback-display-name "$module" --fallback-bundle-identifier "org.intentqueue.$module" \
        --additional-symbol-graph-dir "$work" --output-path "$out/$module.doccarchive" --warnings-as-errors \
        >"$work/docc.log" 2>&1; then
        cat "$work/docc.log" >&2
        echo "docs.sh: DocC failed for $module" >&2
        exit 1
    fi
    rm -rf "$work"
    echo "docs.sh: $out/$module.doccarchive"
done
