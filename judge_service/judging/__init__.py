"""Grading a group: everything between the service and the judge backend.

- base.py: the Grader interface (the whole group in, a grade per answer out) and its result types;
- registry.py: grader names, the named blends, and a registry that resolves a request to graders;
- plan.py: a request's grading plan: run every term's grader, blend per answer (blend.py);
- fingerprint.py: the hash of everything that decides a judgement's scores;
- json_text.py: the one reader of JSON inside text (the judge's replies, the JSON rule graders);
- rules/: the rule graders (similarity, numbers, exact, contains, json, label, json-fields);
- code/: graders written as code (JUDGE_CODE_GRADERS), run in a pool of worker processes;
- rft/: RFT grader configs (JUDGE_RFT_GRADERS and the hosted API's grader routes), on rules/ and code/;
- llm/: the LLM judge, a grader like the others: admission, prompt, answer orders, backend calls,
  parsing, retries.

Imported by the service (and app.py, which builds the registry); imports schemas, errors, metrics and
backends/, never the api, the store or the service. rules/ and llm/ do not import each other.
"""
