"""A second process for the prompt-cache tests: builds the same random-weight model,
gets the prefix from pion-server, and prints its greedy answer as JSON."""

import json
import sys

import pion.mlx
from pion.mlx import random_models


def main() -> None:
    name, seed, port, lane, export, prefix, question, block, step = sys.argv[1:10]
    model = random_models.build(name, seed=int(seed))
    store = pion.mlx.PionPromptCache(
        model,
        port=int(port),
        lane_port=int(lane),
        export=export == "1",
        block_tokens=int(block),
        prefill_step_size=int(step),
    )
    cache = store.get_or_prefill(json.loads(prefix), namespace="tests")
    tokens = random_models.greedy(model, json.loads(question), cache=cache)
    print(json.dumps({"tokens": tokens, "last": store.last}))


if __name__ == "__main__":
    main()
