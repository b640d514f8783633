"""Shared test helpers, imported one way: `from tests.helpers.<module> import …`.

core          tiny stores written directly, an independent reference of the enforced sketch,
              store snapshots, in-process CLI runs
atoms         stores for the atom builders and scorers (CFPB-like metadata, shared corpora)
llm           plans for decoder tests, a scripted OpenAI-compatible server, the local model
card          stores with hostile labels for the release-card tests
browser       headless Chromium over WebDriver (Debian's chromium + chromium-driver)
sql_fuzz      the neighbour-invariance fuzzer's statement generator and store family
verifier_plans the verifier rule tests' plans
"""
