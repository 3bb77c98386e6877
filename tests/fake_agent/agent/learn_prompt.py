"""/learn (agent/learn_prompt.py): the prompt that asks the agent to study a topic."""


def build_learn_prompt(arg: str) -> str:
    return f"Learn about: {arg}".strip()
